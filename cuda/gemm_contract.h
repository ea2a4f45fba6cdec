// How a row-major GEMM (autograd/gemm.h's contract: C [M, N] = α·op(A)·op(B) + β·C, with leading
// dimensions) becomes a call of column-major cuBLAS: a row-major matrix is its transpose in
// column-major, so C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap, M and
// N swap, the transposes and leading dimensions stay as given. cuda/gemm.cu makes the call from
// this; the tests run it through a literal column-major reference on the CPU.
#pragma once

#include <cstdint>

namespace qdq::cuda {

struct ColumnMajorGemm {
    bool trans_first, trans_second;  // cuBLAS's transa, transb
    int64_t m, n, k;
    const float* first;  // cuBLAS's A
    int64_t ld_first;
    const float* second;  // cuBLAS's B
    int64_t ld_second;
    float* out;
    int64_t ld_out;
};

// cuBLAS's SGEMM taken literally, on the host: column-major storage (element (i, j) of a matrix
// with leading dimension ld at i + j·ld), op(X) = Xᵀ when transposed, sums in double;
// out = α·op(first)·op(second) + β·out (β = 0 ignores what out held, as cuBLAS does). The
// emulated device's GEMM (cuda/emulated/gemm.cpp) and the tests of the mapping use it.
inline void column_major_sgemm(const ColumnMajorGemm& g, float alpha, float beta) {
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

// Elements from the first to the last used one of `count` matrices, `stride` apart, each of
// `rows` rows of `cols` used values, `ld` apart: what a bf16 copy of a strided operand holds.
inline int64_t stored_span(int64_t rows, int64_t cols, int64_t ld, int64_t count, int64_t stride) {
    if (rows <= 0 || cols <= 0 || count <= 0) return 0;
    return (count - 1) * stride + (rows - 1) * ld + cols;
}

inline ColumnMajorGemm column_major_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                                         int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
    return {trans_b, trans_a, N, M, K, B, ldb, A, lda, C, ldc};
}

}  // namespace qdq::cuda
