// cuBLAS's column-major GEMMs, literally, for the emulated device: the row-major call is mapped
// exactly as cuda/gemm.cu maps it, then run by the host reference (cuda/gemm_contract.h). The
// bf16 GEMM's operands go through the device's conversion kernel first, as on a GPU.
#include <vector>

#include "cuda/backend.h"
#include "cuda/device_array.h"
#include "cuda/emulated/device_access.h"
#include "cuda/gemm_contract.h"
#include "cuda/host_device.h"

namespace qdq::cuda {

namespace {

// A stored matrix of `rows` rows of `cols` used values, `ld` apart, rounded to bf16 by
// to_bf16 and widened back to floats on the host, in the same layout. Read in place, not
// copied: cuBLAS reads its operands on the device, so host_waits() counts nothing here either.
std::vector<float> bf16_operand(const float* x, int64_t rows, int64_t cols, int64_t ld) {
    const int64_t n = rows > 0 && cols > 0 ? (rows - 1) * ld + cols : 0;
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
    if (M == 0 || N == 0) return;
    DeviceMemoryAccess access;
    column_major_sgemm(column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc), alpha, beta);
}

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    const std::vector<float> a = bf16_operand(A, trans_a ? K : M, trans_a ? M : K, lda);
    const std::vector<float> b = bf16_operand(B, trans_b ? N : K, trans_b ? K : N, ldb);
    DeviceMemoryAccess access;
    column_major_sgemm(column_major_gemm(trans_a, trans_b, M, N, K, a.data(), lda, b.data(), ldb, C, ldc), alpha, beta);
}

// One entry after another, as cuBLAS's strided batch computes them.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmBatch& batch,
                  bool bf16) {
    for (int64_t i = 0; i < batch.count; ++i)
        (bf16 ? gemm_bf16 : gemm)(trans_a, trans_b, M, N, K, alpha, A + i * batch.stride_a, lda,
                                  B + i * batch.stride_b, ldb, beta, C + i * batch.stride_c, ldc);
}

}  // namespace qdq::cuda
