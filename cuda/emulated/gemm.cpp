// cuBLAS's column-major GEMMs, literally, for the emulated device: the row-major call is mapped
// exactly as cuda/gemm.cu maps it, then run by the host reference (cuda/gemm_contract.h). The
// bf16 GEMM's operands go through the device's conversion kernel first (bf16_array), as on a GPU.
#include <vector>

#include "cuda/backend.h"
#include "cuda/emulated/device_access.h"
#include "cuda/gemm_contract.h"
#include "cuda/host_device.h"
#include "cuda/launch_count.h"

namespace qdq::cuda {

namespace {

// n bf16 operands widened back to floats on the host, in the same layout, so leading dimensions
// and strides stay. Read in place, not copied: cuBLAS reads its operands on the device, so
// host_waits() counts nothing here either.
std::vector<float> widened(const uint16_t* bits, int64_t n) {
    DeviceMemoryAccess access;
    std::vector<float> floats((size_t)n);
    for (int64_t i = 0; i < n; ++i) floats[(size_t)i] = float_of_bits((uint32_t)bits[i] << 16);
    return floats;
}

// n stored floats as TF32 tensor cores read them: 10 bits of mantissa, the other 13 dropped.
// PyTorch's notes say only the first 10 bits are read; cuBLAS does not document its conversion,
// so the tests of TF32 products hold for rounding as well. On the host, as no kernel runs for it.
std::vector<float> tf32_operand(const float* x, int64_t n) {
    DeviceMemoryAccess access;
    std::vector<float> shortened((size_t)n);
    for (int64_t i = 0; i < n; ++i) shortened[(size_t)i] = float_of_bits(float_bits(x[i]) & 0xffffe000u);
    return shortened;
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_batched(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {1, 0, 0, 0}, GemmMath::F32);
}

namespace {

// One cuBLAS call (one count) for the batch: one entry after another, as the strided batch
// computes them.
void strided_batch(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmBatch& batch) {
    check_cublas_arguments(column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc), batch.count);
    ++launch_count;
    DeviceMemoryAccess access;
    for (int64_t i = 0; i < batch.count; ++i)
        column_major_sgemm(column_major_gemm(trans_a, trans_b, M, N, K, A + i * batch.stride_a, lda,
                                             B + i * batch.stride_b, ldb, C + i * batch.stride_c, ldc),
                           alpha, beta);
}

}  // namespace

// As cuda/gemm.cu calls cuBLAS: in bf16, after bf16 copies of each operand's whole stored span
// by the device's conversion kernel; in TF32, on the operands as tensor cores read them.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmBatch& batch,
                  GemmMath math) {
    if (M == 0 || N == 0 || batch.count == 0) return;
    const int64_t a_span = stored_span(trans_a ? K : M, trans_a ? M : K, lda, batch.count, batch.stride_a);
    const int64_t b_span = stored_span(trans_b ? N : K, trans_b ? K : N, ldb, batch.count, batch.stride_b);
    if (math == GemmMath::BF16) {
        const Bf16Array a = bf16_array(A, a_span), b = bf16_array(B, b_span);
        gemm_batched_bf16(trans_a, trans_b, M, N, K, alpha, a.get(), lda, b.get(), ldb, beta, C, ldc, batch);
        return;
    }
    if (math == GemmMath::TF32) {
        const std::vector<float> a = tf32_operand(A, a_span), b = tf32_operand(B, b_span);
        strided_batch(trans_a, trans_b, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, C, ldc, batch);
        return;
    }
    strided_batch(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, batch);
}

void gemm_batched_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A,
                       int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc,
                       const GemmBatch& batch) {
    if (M == 0 || N == 0 || batch.count == 0) return;
    const std::vector<float> a = widened(A, stored_span(trans_a ? K : M, trans_a ? M : K, lda, batch.count, batch.stride_a));
    const std::vector<float> b = widened(B, stored_span(trans_b ? N : K, trans_b ? K : N, ldb, batch.count, batch.stride_b));
    strided_batch(trans_a, trans_b, M, N, K, alpha, a.data(), lda, b.data(), ldb, beta, C, ldc, batch);
}

}  // namespace qdq::cuda
