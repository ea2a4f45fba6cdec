// Row-major GEMM through cuBLAS, by the mapping of cuda/gemm_contract.h.
#include "cuda/backend.h"
#include "cuda/check.h"
#include "cuda/cublas_library.h"
#include "cuda/gemm_contract.h"
#include "cuda/launch_count.h"

namespace qdq::cuda {

static cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t created;
        QDQ_CUBLAS_CHECK(cublas().create(&created));
        return created;
    }();
    return h;
}

static cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
    if (M == 0 || N == 0) return;
    const ColumnMajorGemm g = column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
    check_cublas_arguments(g, 1);
    ++launch_count;
    QDQ_CUBLAS_CHECK(cublas().sgemm(handle(), op(g.trans_first), op(g.trans_second), (int)g.m, (int)g.n, (int)g.k,
                                    &alpha, g.first, (int)g.ld_first, g.second, (int)g.ld_second, &beta, g.out,
                                    (int)g.ld_out));
}

// cublasSgemmStridedBatched; cublasGemmStridedBatchedEx on the FP32 operands in TF32, or on
// bf16 copies of them (FP32 compute, gemm_batched_bf16). column_major_gemm swaps the operands, so
// cuBLAS's first is B, its second A.
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const GemmBatch& batch,
                  GemmMath math) {
    if (M == 0 || N == 0 || batch.count == 0) return;
    if (math == GemmMath::BF16) {
        const Bf16Array a = bf16_array(A, stored_span(trans_a ? K : M, trans_a ? M : K, lda, batch.count, batch.stride_a));
        const Bf16Array b = bf16_array(B, stored_span(trans_b ? N : K, trans_b ? K : N, ldb, batch.count, batch.stride_b));
        gemm_batched_bf16(trans_a, trans_b, M, N, K, alpha, a.get(), lda, b.get(), ldb, beta, C, ldc, batch);
        return;
    }
    const ColumnMajorGemm g = column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
    check_cublas_arguments(g, batch.count);
    const int count = (int)batch.count;
    ++launch_count;
    if (math == GemmMath::TF32) {
        QDQ_CUBLAS_CHECK(cublas().gemm_strided_batched_ex(
            handle(), op(g.trans_first), op(g.trans_second), (int)g.m, (int)g.n, (int)g.k, &alpha, g.first, CUDA_R_32F,
            (int)g.ld_first, batch.stride_b, g.second, CUDA_R_32F, (int)g.ld_second, batch.stride_a, &beta, g.out,
            CUDA_R_32F, (int)g.ld_out, batch.stride_c, count, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
        return;
    }
    QDQ_CUBLAS_CHECK(cublas().sgemm_strided_batched(handle(), op(g.trans_first), op(g.trans_second), (int)g.m,
                                                    (int)g.n, (int)g.k, &alpha, g.first, (int)g.ld_first,
                                                    batch.stride_b, g.second, (int)g.ld_second, batch.stride_a, &beta,
                                                    g.out, (int)g.ld_out, batch.stride_c, count));
}

void gemm_batched_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A,
                       int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc,
                       const GemmBatch& batch) {
    if (M == 0 || N == 0 || batch.count == 0) return;
    // The mapping only swaps the operands: it is taken on the float pointers' shapes alone.
    const ColumnMajorGemm g = column_major_gemm(trans_a, trans_b, M, N, K, nullptr, lda, nullptr, ldb, C, ldc);
    check_cublas_arguments(g, batch.count);
    ++launch_count;
    QDQ_CUBLAS_CHECK(cublas().gemm_strided_batched_ex(
        handle(), op(g.trans_first), op(g.trans_second), (int)g.m, (int)g.n, (int)g.k, &alpha, B, CUDA_R_16BF,
        (int)g.ld_first, batch.stride_b, A, CUDA_R_16BF, (int)g.ld_second, batch.stride_a, &beta, g.out, CUDA_R_32F,
        (int)g.ld_out, batch.stride_c, (int)batch.count, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace qdq::cuda
