// cuBLAS's column-major SGEMM, literally, for the emulated device: the row-major call is mapped
// exactly as cuda/gemm.cu maps it (cuda/gemm_contract.h), then out = α·op(first)·op(second) + β·out
// with element (i, j) of a matrix at i + j·ld, summed in double.
#include "cuda/backend.h"
#include "cuda/gemm_contract.h"

namespace qdq::cuda {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
    if (M == 0 || N == 0) return;
    const ColumnMajorGemm g = column_major_gemm(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc);
    auto at = [](const float* x, int64_t ld, bool trans, int64_t i, int64_t j) { return trans ? x[j + i * ld] : x[i + j * ld]; };
    for (int64_t i = 0; i < g.m; ++i)
        for (int64_t j = 0; j < g.n; ++j) {
            double sum = 0;
            for (int64_t p = 0; p < g.k; ++p)
                sum += (double)at(g.first, g.ld_first, g.trans_first, i, p) * at(g.second, g.ld_second, g.trans_second, p, j);
            float& out = g.out[i + j * g.ld_out];
            out = (float)(alpha * sum + (beta == 0.0f ? 0.0 : beta * (double)out));
        }
}

}  // namespace qdq::cuda
