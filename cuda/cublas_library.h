// cuBLAS, opened by the first product on a GPU rather than when the program starts.
// Loading libcublas runs cuBLASLt's initialisers, about half a second and 200 MB resident
// (docs/BENCHMARKS.md): linked as a dependency, every process of a build with the CUDA backend
// paid that at start, a run on the CPU and each test process too. Only the entry points
// cuda/gemm.cu calls are resolved, each typed by cuBLAS's own declaration.
#pragma once

#include <cublas_v2.h>

namespace qdq::cuda {

// cublasGemmStridedBatchedEx as the library exports it: C++ also sees an inline overload that
// takes the legacy cudaDataType as its compute type.
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                const void*, const void*, cudaDataType, int, long long, const void*,
                                                cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                                long long, int, cublasComputeType_t, cublasGemmAlgo_t);
static_assert(sizeof(static_cast<GemmStridedBatchedEx>(&cublasGemmStridedBatchedEx)) > 0,
              "cuBLAS's declaration of cublasGemmStridedBatchedEx changed");

struct CublasLibrary {
    decltype(&cublasCreate_v2) create;
    decltype(&cublasSgemm_v2) sgemm;
    decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
    GemmStridedBatchedEx gemm_strided_batched_ex;
};

// Opened once, by its soname (libcublas.so.<major> of the headers built against) where the
// dynamic loader finds it, else in the toolkit's directory found when the build was configured.
// Throws naming the library and the loader's reason when neither opens or a symbol is missing.
const CublasLibrary& cublas();

// Whether this process has libcublas loaded: false until a product on a GPU needs it.
bool cublas_loaded();

}  // namespace qdq::cuda
