// The CUDA backend's entry points, over raw device pointers (row-major, float32).
// Ops in autograd/ route here when their tensors live on Device::CUDA. A build without CUDA
// links backend_disabled.cpp instead, whose functions report that clearly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qdq::cuda {

bool built_with_cuda();
int device_count();  // 0 without a driver or device; never throws
std::string device_description();

void* device_alloc(size_t bytes);
void device_free(void* ptr);
void memset_zero(void* ptr, size_t bytes);
void copy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes);

// Same contract as qdq::gemm (autograd/gemm.h), on device pointers, through cuBLAS.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc);

// out[i] = a[i] + b[i], same argument order as the CPU kernel in autograd/ops/elementwise.cpp.
void add(float* out, const float* a, const float* b, int64_t n);

}  // namespace qdq::cuda
