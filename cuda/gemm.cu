// Row-major GEMM through cuBLAS, by the mapping of cuda/gemm_contract.h.
#include "cuda/backend.h"
#include "cuda/check.h"
#include "cuda/gemm_contract.h"

namespace qdq::cuda {

static cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created;
        QDQ_CUBLAS_CHECK(cublasCreate(&created));
        return created;
    }();
    return h;
}

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
    if (M == 0 || N == 0) return;
    const ColumnMajorGemm g = column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
    QDQ_CUBLAS_CHECK(cublasSgemm(handle(), g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 (int)g.m, (int)g.n, (int)g.k, &alpha, g.first, (int)g.ld_first, g.second,
                                 (int)g.ld_second, &beta, g.out, (int)g.ld_out));
}

}  // namespace qdq::cuda
