// Error checks for CUDA runtime and cuBLAS calls: a failed call throws with file and line.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define QDQ_CUDA_CHECK(call)                                                                  \
    do {                                                                                      \
        cudaError_t qdq_err = (call);                                                         \
        if (qdq_err != cudaSuccess)                                                           \
            throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                     ": " #call ": " + cudaGetErrorString(qdq_err));          \
    } while (0)

#define QDQ_CUBLAS_CHECK(call)                                                                \
    do {                                                                                      \
        cublasStatus_t qdq_status = (call);                                                   \
        if (qdq_status != CUBLAS_STATUS_SUCCESS)                                              \
            throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                     ": " #call ": cuBLAS status " +                          \
                                     std::to_string((int)qdq_status));                        \
    } while (0)
