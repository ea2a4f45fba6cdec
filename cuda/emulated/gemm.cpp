// cuBLAS's column-major GEMMs, literally, for the emulated device: the row-major call is mapped
// exactly as cuda/gemm.cu maps it, then run by the host reference (cuda/gemm_contract.h). The
// bf16 GEMM's operands go through the device's conversion kernel first, as on a GPU.
#include <vector>

#include "cuda/backend.h"
#include "cuda/device_array.h"
#include "cuda/emulated/device_access.h"
#include "cuda/gemm_contract.h"
#include "cuda/host_device.h"
#include "cuda/launch_count.h"

namespace qdq::cuda {

namespace {

// n stored floats rounded to bf16 by to_bf16 and widened back to floats on the host, in the same
// layout, so leading dimensions and strides stay. Read in place, not copied: cuBLAS reads its
// operands on the device, so host_waits() counts nothing here either.
std::vector<float> bf16_operand(const float* x, int64_t n) {
    DeviceArray<uint16_t> bits((size_t)n, Uninitialized{});
    to_bf16(bits.ptr, x, n);
    DeviceMemoryAccess access;
    std::vector<float> widened((size_t)n);
    for (int64_t i = 0; i < n; ++i) widened[(size_t)i] = float_of_bits((uint32_t)bits.ptr[i] << 16);
    return widened;
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

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_batched(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {1, 0, 0, 0}, GemmMath::BF16);
}

void gemm_tf32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_batched(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {1, 0, 0, 0}, GemmMath::TF32);
}

// As cuda/gemm.cu calls cuBLAS: one call (one count) for the batch, after bf16 copies of each
// operand's whole stored span (or, in TF32, the operands as tensor cores read them); then one
// entry after another, as the strided batch computes them.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmBatch& batch,
                  GemmMath math) {
    if (M == 0 || N == 0 || batch.count == 0) return;
    std::vector<float> a_read, b_read;
    if (math != GemmMath::F32) {
        const auto read = math == GemmMath::BF16 ? bf16_operand : tf32_operand;
        a_read = read(A, stored_span(trans_a ? K : M, trans_a ? M : K, lda, batch.count, batch.stride_a));
        b_read = read(B, stored_span(trans_b ? N : K, trans_b ? K : N, ldb, batch.count, batch.stride_b));
        A = a_read.data();
        B = b_read.data();
    }
    ++launch_count;
    DeviceMemoryAccess access;
    for (int64_t i = 0; i < batch.count; ++i)
        column_major_sgemm(column_major_gemm(trans_a, trans_b, M, N, K, A + i * batch.stride_a, lda,
                                             B + i * batch.stride_b, ldb, C + i * batch.stride_c, ldc),
                           alpha, beta);
}

}  // namespace qdq::cuda
