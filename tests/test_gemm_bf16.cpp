// The bf16 GEMM on every kernel this CPU supports, against a double-precision triple loop over
// the same bf16-rounded inputs: every transpose combination, ragged shapes (tails of the 12-
// and 32-row steps, the 32-column panels and the 32-deep packing), padded leading dimensions,
// alpha and beta, and depths that cross the 256-deep blocks.
//
// Bound: each output is a sum of K exact products (bf16 × bf16 fits in FP32) added in FP32,
// one rounding per addition, so |error| <= (K + 2) · 2^-24 · Σ|a·b| (+ the alpha/beta
// rounding): the classic recursive-summation bound, whatever the order of the sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "tests/support/gemm_operands.h"
#include "tests/support/thread_count.h"

using namespace qdq;
using qdq::testing::GemmOperands;
using qdq::testing::gemm_operands;
using qdq::testing::random_values;

namespace {

std::vector<Bf16Kernel> supported_kernels() {
    std::vector<Bf16Kernel> kernels;
    for (Bf16Kernel k : {Bf16Kernel::Amx, Bf16Kernel::Avx512Bf16})
        if (bf16_kernel_supported(k)) kernels.push_back(k);
    return kernels;
}

void check_gemm_bf16(Bf16Kernel kernel, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                     float alpha, float beta) {
    GemmOperands g = gemm_operands(ta, tb, M, N, K);
    gemm_bf16_on(kernel, ta, tb, M, N, K, alpha, g.A.data(), g.lda, g.B.data(), g.ldb, beta, g.C.data(),
                 g.ldc);
    const double u = std::ldexp(1.0, -24);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double acc = 0, magnitude = 0;
            for (int64_t k = 0; k < K; ++k) {
                double p = (double)round_to_bf16(g.a(i, k)) * round_to_bf16(g.b(k, j));
                acc += p;
                magnitude += std::fabs(p);
            }
            double expected = alpha * acc + beta * g.c0(i, j);
            double bound = (K + 2) * u * std::fabs(alpha) * magnitude +
                           2 * u * (std::fabs(expected) + std::fabs(beta * g.c0(i, j)));
            ASSERT_NEAR(g.c(i, j), expected, bound)
                << bf16_kernel_name(kernel) << " ta=" << ta << " tb=" << tb << " M=" << M
                << " N=" << N << " K=" << K << " at (" << i << ", " << j << ")";
        }
    g.expect_padding_untouched();
}

}  // namespace

TEST(RoundToBf16, NearestEvenAndTheSpecialValues) {
    EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
    EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);  // a tie: to the even 1.0
    EXPECT_EQ(round_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
    EXPECT_EQ(round_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)),
              1.0f + std::ldexp(1.0f, -7));
    EXPECT_EQ(round_to_bf16(-3.0f), -3.0f);
    EXPECT_TRUE(std::isinf(round_to_bf16(3.4e38f)));  // rounds past the largest bf16
    EXPECT_TRUE(std::isnan(round_to_bf16(NAN)));
    EXPECT_EQ(round_to_bf16(1e-40f), 0.0f);
    EXPECT_TRUE(std::signbit(round_to_bf16(-1e-40f)));
}

TEST(GemmBf16, MatchesDoubleReferenceForAllTransposesAndRaggedShapes) {
    std::vector<Bf16Kernel> kernels = supported_kernels();
    if (kernels.empty()) GTEST_SKIP() << "this CPU has neither AMX nor AVX512-BF16";
    for (Bf16Kernel kernel : kernels)
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                check_gemm_bf16(kernel, ta, tb, 67, 45, 131, 1.0f, 0.0f);
                check_gemm_bf16(kernel, ta, tb, 1, 1, 1, 1.0f, 0.0f);
                check_gemm_bf16(kernel, ta, tb, 33, 70, 300, 0.5f, 1.0f);
            }
}

TEST(GemmBf16, LargeShapesAcrossBlocksAndThreads) {
    std::vector<Bf16Kernel> kernels = supported_kernels();
    if (kernels.empty()) GTEST_SKIP() << "this CPU has neither AMX nor AVX512-BF16";
    const qdq::testing::ThreadCount threads(4);
    for (Bf16Kernel kernel : kernels) {
        check_gemm_bf16(kernel, false, true, 410, 530, 97, 1.0f, 0.0f);    // rows split
        check_gemm_bf16(kernel, true, false, 20, 600, 520, -2.0f, 0.25f);  // columns split
        // Three depth blocks, each A block reused by two column blocks; beta on the first only.
        check_gemm_bf16(kernel, true, true, 60, 530, 1600, 1.0f, 0.5f);
    }
}

TEST(GemmBf16, ZeroDepthScalesC) {
    for (Bf16Kernel kernel : supported_kernels()) {
        std::vector<float> C = {1, 2, 3, 4};
        gemm_bf16_on(kernel, false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, C.data(), 2);
        EXPECT_EQ(C, (std::vector<float>{0.5f, 1, 1.5f, 2}));
        std::vector<float> garbage = {NAN, NAN, NAN, NAN};
        gemm_bf16_on(kernel, false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f,
                     garbage.data(), 2);
        EXPECT_EQ(garbage, (std::vector<float>(4, 0.0f)));
    }
}

TEST(GemmBf16, BetaZeroNeverReadsC) {
    for (Bf16Kernel kernel : supported_kernels()) {
        std::vector<float> A(40 * 50, 1.0f), B(50 * 36, 1.0f), C(40 * 36, NAN);
        gemm_bf16_on(kernel, false, false, 40, 36, 50, 1.0f, A.data(), 50, B.data(), 36, 0.0f,
                     C.data(), 36);
        for (float c : C) ASSERT_EQ(c, 50.0f);
    }
}

TEST(GemmBf16, NoneKernelIsTheFp32GemmBitForBit) {
    std::vector<float> A = random_values(30 * 40, 4), B = random_values(40 * 20, 5);
    std::vector<float> C1(30 * 20), C2(30 * 20);
    gemm(false, false, 30, 20, 40, 1.0f, A.data(), 40, B.data(), 20, 0.0f, C1.data(), 20);
    gemm_bf16_on(Bf16Kernel::None, false, false, 30, 20, 40, 1.0f, A.data(), 40, B.data(), 20,
                 0.0f, C2.data(), 20);
    EXPECT_EQ(C1, C2);
}

TEST(GemmBf16, KernelChoiceIsDescribed) {
    std::string description = bf16_kernel_description();
    const std::string expected = bf16_kernel() == Bf16Kernel::None
                                     ? "matrix products run in FP32"
                                     : std::string("bf16 kernel ") + bf16_kernel_name(bf16_kernel());
    EXPECT_NE(description.find(expected), std::string::npos) << description;
    EXPECT_TRUE(bf16_kernel_supported(bf16_kernel()));
}
