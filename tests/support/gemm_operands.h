// Random operands of one GEMM for the GEMM tests: A, B and C stored with padded leading
// dimensions, so that a stride bug cannot hide behind a contiguous layout, and op(A), op(B)
// read element by element for a reference loop.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "autograd/rng.h"

namespace qdq::testing {

struct GemmOperands {
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    std::vector<float> A, B, C, C0;  // C0: C before the product

    float a(int64_t i, int64_t k) const { return ta ? A[(size_t)(k * lda + i)] : A[(size_t)(i * lda + k)]; }
    float b(int64_t k, int64_t j) const { return tb ? B[(size_t)(j * ldb + k)] : B[(size_t)(k * ldb + j)]; }
    float c(int64_t i, int64_t j) const { return C[(size_t)(i * ldc + j)]; }
    float c0(int64_t i, int64_t j) const { return C0[(size_t)(i * ldc + j)]; }

    void expect_padding_untouched() const {
        for (int64_t i = 0; i < M; ++i)
            for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(c(i, j), c0(i, j)) << "padding of C written";
    }
};

inline std::vector<float> random_values(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = 2.0f * rng.uniform() - 1.0f;
    return v;
}

// Uniform values in [-1, 1); each matrix's rows padded by `pad` unused elements.
inline GemmOperands gemm_operands(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t pad = 3) {
    GemmOperands g{ta, tb, M, N, K, (ta ? M : K) + pad, (tb ? K : N) + pad, N + pad, {}, {}, {}, {}};
    g.A = random_values((size_t)((ta ? K : M) * g.lda), 1);
    g.B = random_values((size_t)((tb ? N : K) * g.ldb), 2);
    g.C = random_values((size_t)(M * g.ldc), 3);
    g.C0 = g.C;
    return g;
}

}  // namespace qdq::testing
