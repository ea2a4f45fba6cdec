// Row-major GEMM through cuBLAS, which is column-major: a row-major C = op(A)·op(B) is the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so the operands swap and the transposes stay as given.
#include "cuda/backend.h"
#include "cuda/check.h"

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
    QDQ_CUBLAS_CHECK(cublasSgemm(handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M, (int)K,
                                 &alpha, B, (int)ldb, A, (int)lda, &beta, C, (int)ldc));
}

}  // namespace qdq::cuda
