// How a row-major GEMM (autograd/gemm.h's contract: C [M, N] = α·op(A)·op(B) + β·C, with leading
// dimensions) becomes a call of column-major cuBLAS: a row-major matrix is its transpose in
// column-major, so C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: the operands swap, M and
// N swap, the transposes and leading dimensions stay as given. cuda/gemm.cu makes the call from
// this; the tests run it through a literal column-major reference on the CPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

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

// cuBLAS's argument checks, which fail a call with CUBLAS_STATUS_INVALID_VALUE before any data is
// read, whatever m, n or k: each leading dimension at least max(1, its operand's stored rows),
// and sizes cuBLAS's 32-bit ints hold (the casts at the call would wrap them). Both backends
// apply them before a call, so a product a GPU would refuse fails on the emulated device too,
// with the rule it breaks.
inline void check_cublas_arguments(const ColumnMajorGemm& g, int64_t batch_count) {
    auto refuse = [](const std::string& rule) { throw std::runtime_error("cuBLAS GEMM: " + rule); };
    auto at_least = [&](const char* name, int64_t ld, int64_t rows) {
        if (ld < std::max<int64_t>(1, rows))
            refuse(std::string(name) + " " + std::to_string(ld) + " is below max(1, " + std::to_string(rows) + ")");
    };
    if (g.m < 0 || g.n < 0 || g.k < 0 || batch_count < 0) refuse("m, n, k and the batch count must not be negative");
    at_least("lda", g.ld_first, g.trans_first ? g.k : g.m);
    at_least("ldb", g.ld_second, g.trans_second ? g.n : g.k);
    at_least("ldc", g.ld_out, g.m);
    const int64_t largest = std::max({g.m, g.n, g.k, g.ld_first, g.ld_second, g.ld_out, batch_count});
    if (largest > std::numeric_limits<int>::max()) refuse(std::to_string(largest) + " does not fit cuBLAS's int");
}

// With K = 0 no element of A or B is read, and qdq::gemm takes a tight [rows, 0] operand's
// leading dimension of 0 (a linear with no outputs has such a gradient); cuBLAS refuses ld 0
// whatever k, so both are given at least 1 there.
inline ColumnMajorGemm column_major_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                                         int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
    if (K == 0) {
        lda = std::max<int64_t>(lda, 1);
        ldb = std::max<int64_t>(ldb, 1);
    }
    return {trans_b, trans_a, N, M, K, B, ldb, A, lda, C, ldc};
}

}  // namespace qdq::cuda
