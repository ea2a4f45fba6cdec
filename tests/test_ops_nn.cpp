// Neural-network ops (matmul, linear, embedding, gelu, tanh, softmax, log_softmax,
// cross_entropy, layer_norm, add_layer_norm, dropout): what the op table (tests/op_table.cpp,
// run on every device against PyTorch, finite differences and the CPU by test_op_table) does
// not reach:
//  - The exp and erf approximations behind the kernels against std::exp / std::erf in double.
//  - Dropout by its mask's statistics and determinism (it draws its own random numbers, so
//    PyTorch cannot serve as a reference).
//  - Properties no single case shows (thread-count independence, accumulation, edge cases).
//  - Bad inputs: each throws an error naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "autograd/ops.h"
#include "autograd/ops/vector_math.h"
#include "autograd/tape.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"
#include "tests/support/thread_count.h"

using namespace qdq;
using namespace qdq::testing;

// ---- the vectorizable exp and erf ----------------------------------------------------------

namespace {

// Compiled like the kernels (the same clones, picked the same way), so the error measured is
// the one the ops have on this CPU.
QDQ_VECTOR_KERNEL
void erf_over(float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = vmath::erf_approx(x[i]);
}

QDQ_VECTOR_KERNEL
void exp_over(float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = vmath::exp_approx(x[i]);
}

std::string scientific(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", v);
    return text;
}

std::vector<float> grid(float low, float high, int64_t n) {
    std::vector<float> x((size_t)n);
    for (int64_t i = 0; i < n; ++i) x[(size_t)i] = low + (high - low) * (float)i / (float)(n - 1);
    return x;
}

}  // namespace

// The requirement for GELU: erf within ~1e-7 absolute, i.e. about one float32 ulp of 1.0
// (1.19e-7), which is as close as a float near ±1 can be. Two million points cover [-10, 10]
// in steps of 1e-5, both pieces of the approximation and the switch between them.
TEST(OpsNnVectorMath, ErfIsWithinOneUlpOfStdErf) {
    std::vector<float> x = grid(-10.0f, 10.0f, 2000001), y(x.size());
    erf_over(y.data(), x.data(), (int64_t)x.size());
    double worst = 0;
    float worst_at = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        double err = std::fabs((double)y[i] - std::erf((double)x[i]));
        if (err > worst) worst = err, worst_at = x[i];
    }
    RecordProperty("max_abs_error", scientific(worst));
    EXPECT_LE(worst, 1.19e-7) << "at x = " << worst_at;
    float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN}, out[5];
    erf_over(out, special, 5);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[2], 1.0f);
    EXPECT_EQ(out[3], -1.0f);
    EXPECT_TRUE(std::isnan(out[4]));
}

// Two ulp relative over the whole range where e^x is a normal float, and a clean 0 below.
TEST(OpsNnVectorMath, ExpIsWithinTwoUlpOfStdExp) {
    std::vector<float> x = grid(-87.0f, 88.0f, 2000001), y(x.size());
    exp_over(y.data(), x.data(), (int64_t)x.size());
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        double exact = std::exp((double)x[i]);
        worst = std::max(worst, std::fabs((double)y[i] - exact) / exact);
    }
    RecordProperty("max_rel_error", scientific(worst));
    EXPECT_LE(worst, 2.4e-7);
    float special[] = {0.0f, -88.0f, -1e4f, -INFINITY, NAN}, out[5];
    exp_over(out, special, 5);
    EXPECT_EQ(out[0], 1.0f);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_EQ(out[2], 0.0f);
    EXPECT_EQ(out[3], 0.0f);
    EXPECT_TRUE(std::isnan(out[4]));
}

// GELU through the op on a dense grid, against x·½erfc(−x/√2) in double. Relative error
// everywhere, the far negative tail included (gelu(−12) ≈ −2e−32): there Φ comes from erfc
// directly instead of 1 + erf. The derivative changes sign near x = −0.75, hence its atol.
TEST(OpsNnVectorMath, GeluAndItsDerivativeOnADenseGrid) {
    std::vector<float> values = grid(-12.0f, 12.0f, 24001);
    Tensor x = from_vector({(int64_t)values.size()}, values).set_requires_grad();
    Tensor y = gelu(x);
    backward(y, full(x.shape(), 1.0f));
    std::vector<float> expected_y, expected_dy;
    for (float v : values) {
        double xd = v, cdf = 0.5 * std::erfc(-xd / std::sqrt(2.0));
        double pdf = std::exp(-0.5 * xd * xd) / std::sqrt(2.0 * M_PI);
        expected_y.push_back((float)(xd * cdf));
        expected_dy.push_back((float)(cdf + xd * pdf));
    }
    expect_close(y, from_vector(x.shape(), expected_y), 1e-5f, 1e-30f, "gelu");
    expect_close(x.grad(), from_vector(x.shape(), expected_dy), 1e-5f, 2e-7f, "gelu'");
}

// ---- dropout --------------------------------------------------------------------------------

namespace {

constexpr int64_t kDropoutN = 1 << 17;  // above the kernel's grain, so two threads split it

int64_t zero_count(const Tensor& t) {
    int64_t zeros = 0;
    for (float v : t.to_vector()) zeros += v == 0.0f;
    return zeros;
}

}  // namespace

// The zeroed fraction is Binomial(n, p)/n: its standard deviation √(p(1−p)/n) is at most
// 1.4e-3 here, and the bound is five of them.
TEST(OpsNnDropout, ZeroesAFractionPAndScalesTheRestByOneOverOneMinusP) {
    Tensor x = full({kDropoutN}, 1.0f);
    for (float p : {0.1f, 0.5f, 0.9f}) {
        Rng rng(11);
        Tensor y = dropout(x, p, true, rng);
        double fraction = (double)zero_count(y) / kDropoutN;
        EXPECT_NEAR(fraction, p, 5 * std::sqrt(p * (1 - p) / kDropoutN)) << "p = " << p;
        for (float v : y.to_vector()) {
            if (v != 0.0f) {
                ASSERT_EQ(v, 1.0f / (1.0f - p)) << "p = " << p;
            }
        }
    }
}

TEST(OpsNnDropout, SameSeedGivesTheSameMaskAndEachCallANewOne) {
    Tensor x = random_tensor({4096}, 3, 0.5f, 1.5f);
    Rng a(5), b(5);
    Tensor first = dropout(x, 0.3f, true, a);
    EXPECT_EQ(first.to_vector(), dropout(x, 0.3f, true, b).to_vector());
    EXPECT_NE(first.to_vector(), dropout(x, 0.3f, true, a).to_vector());
}

TEST(OpsNnDropout, MaskDoesNotDependOnTheThreadCount) {
    Tensor x = random_tensor({kDropoutN}, 4, 0.5f, 1.5f);
    auto masked = [&](int threads) {
        const qdq::testing::ThreadCount count(threads);
        Rng rng(9);
        return dropout(x, 0.25f, true, rng).to_vector();
    };
    EXPECT_EQ(masked(1), masked(2));
}

TEST(OpsNnDropout, GradientIsTheMaskTimesTheScale) {
    Tensor x = random_tensor({kDropoutN}, 6, 0.5f, 1.5f).set_requires_grad();  // never 0
    Rng rng(2);
    Tensor y = dropout(x, 0.4f, true, rng);
    Tensor g = random_tensor(x.shape(), 7);
    backward(y, g);
    std::vector<float> vy = y.to_vector(), vg = g.to_vector(), vgx = x.grad().to_vector();
    for (size_t i = 0; i < vy.size(); ++i)
        ASSERT_EQ(vgx[i], vy[i] == 0.0f ? 0.0f : vg[i] * (1.0f / 0.6f)) << "element " << i;
}

TEST(OpsNnDropout, IsTheIdentityWhenNotTrainingOrPIsZero) {
    Tensor x = random_tensor({16}, 9).set_requires_grad();
    Rng rng(1);
    auto state = rng.state;
    EXPECT_TRUE(dropout(x, 0.5f, false, rng).same_as(x));
    EXPECT_TRUE(dropout(x, 0.0f, true, rng).same_as(x));
    EXPECT_EQ(rng.state, state) << "no key is drawn when nothing is dropped";
    EXPECT_EQ(tape_size(), 0u);
}

// ---- properties no single case shows --------------------------------------------------------

// dγ and dβ sum over rows in fixed blocks, so even their rounding is thread-count independent.
TEST(OpsNnLayerNorm, GradientsDoNotDependOnTheThreadCount) {
    Tensor x = random_tensor({300, 64}, 10), res = random_tensor({300, 64}, 11);
    Tensor gamma = random_tensor({64}, 12, 0.5f, 1.5f), beta = random_tensor({64}, 13);
    Tensor g = random_tensor({300, 64}, 14);
    auto run = [&](int threads) {
        const qdq::testing::ThreadCount count(threads);
        Tensor xs = x.clone().set_requires_grad(), gs = gamma.clone().set_requires_grad(),
               bs = beta.clone().set_requires_grad();
        backward(add_layer_norm(xs, res, gs, bs, 1e-12f), g);
        return std::vector<std::vector<float>>{xs.grad().to_vector(), gs.grad().to_vector(),
                                               bs.grad().to_vector()};
    };
    EXPECT_EQ(run(1), run(2));
}

// The forward computes in double and rounds once, so each output is the float nearest the value
// computed in long double (64-bit significand) from the same float inputs; a float forward parts
// from it by an ulp on most of these outputs. Rows of BERT's widths, a large mean and a small
// spread (where a float mean loses most), with and without the residual addend, which the op
// sums in float first.
TEST(OpsNnLayerNorm, EachOutputIsTheFloatNearestTheExactValue) {
    const int64_t rows = 48;
    const float eps = 1e-12f;
    for (int64_t C : {256, 768, 1024})
        for (bool with_residual : {false, true}) {
            Tensor x = add(random_tensor({rows, C}, 20, -0.5f, 0.5f), full({1}, 30.0f));
            Tensor res = random_tensor({rows, C}, 21, -2.0f, 2.0f);
            Tensor gamma = random_tensor({C}, 22, 0.5f, 1.5f), beta = random_tensor({C}, 23);
            const std::vector<float> y = (with_residual ? add_layer_norm(x, res, gamma, beta, eps)
                                                        : layer_norm(x, gamma, beta, eps)).to_vector();
            const std::vector<float> px = x.to_vector(), pr = res.to_vector(), g = gamma.to_vector(), b = beta.to_vector();
            int64_t parted = 0;
            for (int64_t r = 0; r < rows; ++r) {
                std::vector<float> in((size_t)C);
                for (int64_t j = 0; j < C; ++j)
                    in[(size_t)j] = with_residual ? px[(size_t)(r * C + j)] + pr[(size_t)(r * C + j)] : px[(size_t)(r * C + j)];
                long double total = 0, squares = 0;
                for (float v : in) total += v;
                const long double mean = total / C;
                for (float v : in) squares += (v - mean) * (v - mean);
                const long double rstd = 1.0L / std::sqrt(squares / C + eps);
                for (int64_t j = 0; j < C; ++j) {
                    const float exact = (float)((in[(size_t)j] - mean) * rstd * g[(size_t)j] + b[(size_t)j]);
                    parted += y[(size_t)(r * C + j)] != exact;
                }
            }
            EXPECT_EQ(parted, 0) << "C " << C << (with_residual ? " with residual" : "");
        }
}

// The GEMMs of linear's backward accumulate (beta = 1) into existing gradients.
TEST(OpsNnLinear, BackwardAccumulatesIntoExistingGradients) {
    Tensor x = random_tensor({3, 4}, 15).set_requires_grad();
    Tensor w = random_tensor({2, 4}, 16).set_requires_grad();
    Tensor b = random_tensor({2}, 17).set_requires_grad();
    Tensor g = random_tensor({3, 2}, 18);
    backward(linear(x, w, b), g);
    std::vector<float> gx = x.grad().to_vector(), gw = w.grad().to_vector(),
                       gb = b.grad().to_vector();
    backward(linear(x, w, b), g);
    for (auto [t, once] : {std::pair{x, gx}, std::pair{w, gw}, std::pair{b, gb}}) {
        std::vector<float> twice = t.grad().to_vector();
        for (size_t i = 0; i < once.size(); ++i) EXPECT_EQ(twice[i], 2 * once[i]);
    }
}

TEST(OpsNnCrossEntropy, EveryRowIgnoredGivesZeroLossAndZeroGradient) {
    Tensor logits = random_tensor({3, 4}, 19).set_requires_grad();
    Tensor loss = cross_entropy(logits, from_ints({3}, {-100, -100, -100}));
    EXPECT_EQ(loss.item(), 0.0f);
    backward(loss);
    EXPECT_EQ(logits.grad().to_vector(), std::vector<float>(12, 0.0f));
}

// Large logits: a naive exp would overflow; the row max keeps everything finite.
TEST(OpsNnCrossEntropy, LargeLogitsStayFinite) {
    Tensor logits = from_vector({2, 3}, {1000, 0, -1000, 88, 89, 90});
    EXPECT_NEAR(cross_entropy(logits, from_ints({2}, {0, 2})).item(),
                0.5 * std::log1p(std::exp(-1.0) + std::exp(-2.0)), 1e-6);
    for (float v : softmax(logits).to_vector()) EXPECT_TRUE(std::isfinite(v));
}

// ---- bad inputs ------------------------------------------------------------------------------

TEST(OpsNnErrors, Matmul) {
    Tensor a = random_tensor({2, 3}, 1), b = random_tensor({4, 5}, 2);
    expect_error([&] { matmul(a, b); }, {"matmul", "inner dims", "[2, 3]", "[4, 5]"});
    expect_error([&] { matmul(random_tensor({2, 3, 4}, 3), random_tensor({3, 4, 5}, 4)); },
                 {"matmul", "batch dims"});
    expect_error([&] { matmul(random_tensor({3}, 5), b); }, {"matmul", "2-D"});
    expect_error([&] { matmul(a, from_ints({3, 2}, {1, 2, 3, 4, 5, 6})); },
                 {"matmul", "float32", "int32"});
}

TEST(OpsNnErrors, Linear) {
    Tensor x = random_tensor({2, 3, 8}, 1), w = random_tensor({5, 8}, 2);
    expect_error([&] { linear(random_tensor({2, 7}, 3), w, Tensor()); },
                 {"linear", "[2, 7]", "in-features 8"});
    expect_error([&] { linear(x, w, random_tensor({4}, 4)); }, {"linear", "bias", "[5]", "[4]"});
    expect_error([&] { linear(x, random_tensor({8}, 5), Tensor()); }, {"linear", "weight"});
}

TEST(OpsNnErrors, EmbeddingIdOutsideTheVocabulary) {
    Tensor w = random_tensor({10, 4}, 1);
    expect_error([&] { embedding(w, from_ints({3}, {1, 10, 2})); },
                 {"embedding", "id 10", "size 10"});
    expect_error([&] { embedding(w, from_ints({2}, {-1, 0})); }, {"embedding", "id -1"});
    expect_error([&] { embedding(w, random_tensor({2}, 2)); }, {"embedding", "int32"});
    expect_error([&] { embedding(w, from_ints({2}, {1, 0}), 10); }, {"embedding", "padding_idx 10", "size 10"});
}

TEST(OpsNnErrors, SoftmaxMask) {
    Tensor x = random_tensor({2, 4, 6}, 1);
    expect_error([&] { softmax(x, 1.0f, random_tensor({2, 1, 5}, 2)); },
                 {"softmax", "mask", "[2, 1, 5]", "6"});
    expect_error([&] { softmax(x, 1.0f, random_tensor({3, 1, 6}, 3)); }, {"broadcast"});
    expect_error([&] { softmax(x, 1.0f, random_tensor({1, 2, 1, 6}, 4)); }, {"softmax", "mask"});
}

TEST(OpsNnErrors, CrossEntropyLabels) {
    Tensor logits = random_tensor({4, 5}, 1);
    expect_error([&] { cross_entropy(logits, from_ints({4}, {0, 1, 5, 2})); },
                 {"cross_entropy", "label 5", "row 2", "[0, 5)"});
    expect_error([&] { cross_entropy(logits, from_ints({4}, {0, -1, 1, 2})); },
                 {"label -1", "row 1"});
    expect_error([&] { cross_entropy(logits, from_ints({3}, {0, 1, 2})); },
                 {"cross_entropy", "labels", "[3]"});
    expect_error([&] { cross_entropy(random_tensor({2, 2, 5}, 2), from_ints({2}, {0, 1})); },
                 {"cross_entropy", "[N, C]"});
}

TEST(OpsNnErrors, LayerNormShapes) {
    Tensor x = random_tensor({3, 8}, 1), gamma = random_tensor({8}, 2), beta = random_tensor({8}, 3);
    expect_error([&] { layer_norm(x, random_tensor({7}, 4), beta, 1e-5f); },
                 {"layer_norm", "gamma", "[8]"});
    expect_error([&] { add_layer_norm(x, random_tensor({3, 7}, 5), gamma, beta, 1e-5f); },
                 {"add_layer_norm", "[3, 8]", "[3, 7]"});
}

TEST(OpsNnErrors, DropoutProbability) {
    Tensor x = random_tensor({8}, 1);
    Rng rng(1);
    for (float p : {1.0f, -0.1f, 1.5f})
        expect_error([&] { dropout(x, p, true, rng); }, {"dropout", "[0, 1)"});
    expect_error([&] { dropout(x, 1.0f, false, rng); }, {"dropout", "[0, 1)"});
}
