// Autograd semantics: recording rules, accumulation, reuse, no_grad, detach, long chains.
// Expected values are worked out by hand from the calculus, independent of the kernels.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "autograd/tape.h"

using namespace qdq;

TEST(Tape, TensorUsedTwiceGetsBothContributions) {
    Tensor a = from_vector({3}, {1, -2, 3}).set_requires_grad();
    backward(sum_all(mul(a, a)));  // d/da Σ a² = 2a
    EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{2, -4, 6}));
}

TEST(Tape, TwoBackwardPassesAccumulate) {
    Tensor a = from_vector({2}, {1, 2}).set_requires_grad();
    Tensor b = from_vector({2}, {3, 5});
    backward(sum_all(mul(a, b)));
    backward(sum_all(mul(a, b)));
    EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{6, 10}));
    a.zero_grad();
    EXPECT_FALSE(a.grad().defined());
}

TEST(Tape, RecordsOnlyWhenAnInputRequiresGrad) {
    Tensor a = from_vector({2}, {1, 2});
    Tensor b = from_vector({2}, {3, 4});
    Tensor c = add(a, b);
    EXPECT_EQ(tape_size(), 0u);
    EXPECT_FALSE(c.requires_grad());
    b.set_requires_grad();
    Tensor d = add(a, b);
    EXPECT_EQ(tape_size(), 1u);
    EXPECT_TRUE(d.requires_grad());
    clear_tape();
}

TEST(Tape, NoGradGuardStopsRecordingAndRestores) {
    Tensor a = from_vector({2}, {1, 2}).set_requires_grad();
    {
        NoGradGuard guard;
        Tensor b = mul(a, a);
        EXPECT_FALSE(b.requires_grad());
        EXPECT_EQ(tape_size(), 0u);
    }
    EXPECT_TRUE(grad_enabled());
    Tensor c = mul(a, a);
    EXPECT_TRUE(c.requires_grad());
    clear_tape();
}

TEST(Tape, DetachCutsTheGraphButSharesData) {
    Tensor a = from_vector({2}, {1, 2}).set_requires_grad();
    Tensor d = a.detach();
    EXPECT_FALSE(d.requires_grad());
    EXPECT_EQ(d.f32(), a.f32());
    backward(sum_all(mul(a, d)));  // d treated as a constant: gradient is d, not 2a
    EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{1, 2}));
}

TEST(Tape, BackwardFreesTheTapeAndIntermediateGradients) {
    Tensor a = from_vector({2}, {1, 2}).set_requires_grad();
    Tensor m = mul(a, a);
    Tensor loss = sum_all(m);
    EXPECT_EQ(tape_size(), 2u);
    backward(loss);
    EXPECT_EQ(tape_size(), 0u);
    EXPECT_FALSE(m.grad().defined());
    EXPECT_TRUE(a.grad().defined());
}

TEST(Tape, HundredThousandNodeChainNeedsNoRecursion) {
    Tensor a = from_vector({1}, {0.5f}).set_requires_grad();
    Tensor one = from_vector({1}, {1.0f});
    Tensor x = a;
    for (int i = 0; i < 100000; ++i) x = add(x, one);
    EXPECT_EQ(tape_size(), 100000u);
    EXPECT_FLOAT_EQ(x.item(), 100000.5f);
    backward(sum_all(x));
    EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{1.0f}));
}

TEST(Tape, BackwardRejectsANonScalarRootWithoutAGradient) {
    Tensor a = from_vector({2}, {1, 2}).set_requires_grad();
    Tensor b = mul(a, a);
    EXPECT_THROW(backward(b), std::runtime_error);
    clear_tape();
}

TEST(Tape, ExplicitRootGradientIsUsed) {
    Tensor a = from_vector({2}, {1, 2}).set_requires_grad();
    backward(mul(a, a), from_vector({2}, {10, 100}));  // 2a ⊙ g
    EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{20, 400}));
}
