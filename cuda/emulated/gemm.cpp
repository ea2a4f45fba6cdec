// cuBLAS's column-major SGEMM, literally, for the emulated device: the row-major call is mapped
// exactly as cuda/gemm.cu maps it, then run by the host reference (cuda/gemm_contract.h).
#include "cuda/backend.h"
#include "cuda/emulated/device_access.h"
#include "cuda/gemm_contract.h"

namespace qdq::cuda {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    DeviceMemoryAccess access;
    column_major_sgemm(column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc), alpha, beta);
}

}  // namespace qdq::cuda
