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

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_batched(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {1, 0, 0, 0}, false);
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    gemm_batched(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, {1, 0, 0, 0}, true);
}

// As cuda/gemm.cu calls cuBLAS: one call (one count) for the batch, after bf16 copies of each
// operand's whole stored span; then one entry after another, as the strided batch computes them.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmBatch& batch,
                  bool bf16) {
    if (M == 0 || N == 0 || batch.count == 0) return;
    std::vector<float> a_bf16, b_bf16;
    if (bf16) {
        a_bf16 = bf16_operand(A, stored_span(trans_a ? K : M, trans_a ? M : K, lda, batch.count, batch.stride_a));
        b_bf16 = bf16_operand(B, stored_span(trans_b ? N : K, trans_b ? K : N, ldb, batch.count, batch.stride_b));
        A = a_bf16.data();
        B = b_bf16.data();
    }
    ++launch_count;
    DeviceMemoryAccess access;
    for (int64_t i = 0; i < batch.count; ++i)
        column_major_sgemm(column_major_gemm(trans_a, trans_b, M, N, K, A + i * batch.stride_a, lda,
                                             B + i * batch.stride_b, ldb, C + i * batch.stride_c, ldc),
                           alpha, beta);
}

}  // namespace qdq::cuda
