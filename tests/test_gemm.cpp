// The project's GEMM against a plain triple loop in double precision, over odd shapes,
// every transpose combination, padded leading dimensions, alpha and beta.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gemm.h"
#include "autograd/rng.h"

using namespace qdq;

namespace {

std::vector<float> random_values(size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = 2.0f * rng.uniform() - 1.0f;
    return v;
}

void check_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta) {
    // Leading dimensions padded by 3 so that a stride bug cannot hide behind a contiguous layout.
    int64_t rows_a = ta ? K : M, cols_a = ta ? M : K, lda = cols_a + 3;
    int64_t rows_b = tb ? N : K, cols_b = tb ? K : N, ldb = cols_b + 3;
    int64_t ldc = N + 3;
    std::vector<float> A = random_values((size_t)(rows_a * lda), 1);
    std::vector<float> B = random_values((size_t)(rows_b * ldb), 2);
    std::vector<float> C = random_values((size_t)(M * ldc), 3);
    std::vector<float> C0 = C;
    gemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k) {
                double a = ta ? A[(size_t)(k * lda + i)] : A[(size_t)(i * lda + k)];
                double b = tb ? B[(size_t)(j * ldb + k)] : B[(size_t)(k * ldb + j)];
                acc += a * b;
            }
            double expected = alpha * acc + beta * C0[(size_t)(i * ldc + j)];
            // float32 accumulation of K products of magnitude < 1: error grows like K·2^-24.
            ASSERT_NEAR(C[(size_t)(i * ldc + j)], expected, 1e-6 * K + 1e-6)
                << "ta=" << ta << " tb=" << tb << " at (" << i << ", " << j << ")";
        }
    // The padding columns of C must be untouched.
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = N; j < ldc; ++j) ASSERT_EQ(C[(size_t)(i * ldc + j)], C0[(size_t)(i * ldc + j)]);
}

}  // namespace

TEST(Gemm, MatchesTripleLoopForAllTransposes) {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) check_gemm(ta, tb, 67, 45, 131, 1.0f, 0.0f);
}

TEST(Gemm, AlphaAndBetaAccumulate) {
    check_gemm(false, true, 33, 17, 64, 0.5f, 1.0f);
    check_gemm(true, false, 16, 31, 9, -2.0f, 0.25f);
}

TEST(Gemm, LargeEnoughToUseEveryThread) { check_gemm(false, false, 300, 260, 200, 1.0f, 0.0f); }

TEST(Gemm, BackendDescribesItsKernel) {
    std::string d = gemm_backend_description();
    EXPECT_NE(d.find("OpenBLAS"), std::string::npos) << d;
    EXPECT_NE(d.find("kernel"), std::string::npos) << d;
}
