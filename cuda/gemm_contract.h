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

inline ColumnMajorGemm column_major_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float* A,
                                         int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
    return {trans_b, trans_a, N, M, K, B, ldb, A, lda, C, ldc};
}

}  // namespace qdq::cuda
