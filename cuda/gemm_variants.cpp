// The products and operands built on a backend's own GEMM calls, one text for the GPU
// (cuda/gemm.cu) and the emulated device (cuda/emulated/gemm.cpp): a single product in bf16 or
// TF32 is a batch of one, and a bf16 operand is the device's conversion kernel's output.
#include "cuda/backend.h"

namespace qdq::cuda {

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_batched(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {1, 0, 0, 0}, GemmMath::BF16);
}

void gemm_tf32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_batched(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {1, 0, 0, 0}, GemmMath::TF32);
}

Bf16Array bf16_array(const float* x, int64_t n) {
    // At least one element, so that an empty operand is still a pointer cuBLAS may be handed.
    uint16_t* bits = static_cast<uint16_t*>(device_alloc((size_t)(n > 0 ? n : 1) * sizeof(uint16_t)));
    try {
        to_bf16(bits, x, n);
    } catch (...) {
        device_free(bits);
        throw;
    }
    return Bf16Array(bits, [](const uint16_t* p) { device_free(const_cast<uint16_t*>(p)); });
}

}  // namespace qdq::cuda
