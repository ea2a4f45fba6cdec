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

namespace {

// The bf16 bits of a stored matrix of `rows` rows of `cols` used values, `ld` apart: the same
// layout, so the leading dimension stays.
struct Bf16Copy {
    uint16_t* bits = nullptr;
    Bf16Copy(const float* x, int64_t rows, int64_t cols, int64_t ld) {
        const int64_t n = rows > 0 && cols > 0 ? (rows - 1) * ld + cols : 0;
        bits = static_cast<uint16_t*>(device_alloc((size_t)n * sizeof(uint16_t)));
        to_bf16(bits, x, n);
    }
    ~Bf16Copy() { device_free(bits); }
    Bf16Copy(const Bf16Copy&) = delete;
    Bf16Copy& operator=(const Bf16Copy&) = delete;
};

}  // namespace

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
               const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    const Bf16Copy a(A, trans_a ? K : M, trans_a ? M : K, lda), b(B, trans_b ? N : K, trans_b ? K : N, ldb);
    const ColumnMajorGemm g = column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
    // The swap of column_major_gemm: cuBLAS's first operand is B, its second A.
    QDQ_CUBLAS_CHECK(cublasGemmEx(handle(), g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N,
                                  g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g.m, (int)g.n, (int)g.k, &alpha, b.bits,
                                  CUDA_R_16BF, (int)g.ld_first, a.bits, CUDA_R_16BF, (int)g.ld_second, &beta, g.out,
                                  CUDA_R_32F, (int)g.ld_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace qdq::cuda
