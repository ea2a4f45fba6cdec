// The project's GEMM against a plain triple loop in double precision, over odd shapes,
// every transpose combination, padded leading dimensions, alpha and beta.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gemm.h"
#include "tests/support/gemm_operands.h"
#include "tests/support/thread_count.h"

using namespace qdq;
using qdq::testing::GemmOperands;
using qdq::testing::gemm_operands;

namespace {

void check_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta) {
    GemmOperands g = gemm_operands(ta, tb, M, N, K);
    gemm(ta, tb, M, N, K, alpha, g.A.data(), g.lda, g.B.data(), g.ldb, beta, g.C.data(), g.ldc);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k) acc += (double)g.a(i, k) * g.b(k, j);
            double expected = alpha * acc + beta * g.c0(i, j);
            // float32 accumulation of K products of magnitude < 1: error grows like K·2^-24.
            ASSERT_NEAR(g.c(i, j), expected, 1e-6 * K + 1e-6)
                << "ta=" << ta << " tb=" << tb << " at (" << i << ", " << j << ")";
        }
    g.expect_padding_untouched();
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

TEST(Gemm, LargeEnoughToUseEveryThread) {
    const qdq::testing::ThreadCount threads(4);
    check_gemm(false, false, 300, 260, 200, 1.0f, 0.0f);
}

TEST(Gemm, BackendDescribesItsKernel) {
    std::string d = gemm_backend_description();
    EXPECT_NE(d.find("OpenBLAS"), std::string::npos) << d;
    EXPECT_NE(d.find("kernel"), std::string::npos) << d;
}
