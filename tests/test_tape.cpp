// Autograd semantics: recording rules, accumulation, reuse, no_grad, detach, long chains.
// Expected values are worked out by hand from the calculus, independent of the kernels.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

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

// y = (a·b + c)·a: a is read by the first and the last node, b and c by the first alone. Walking
// back, a's gradient is final only after the first node (the last to run), where b's and c's
// also are; a leaf read by the last node only (d) is final first. At each report the gradient
// must already be its final value, worked out by hand: d(Σ (a·b + c)·a·d)/da = (2ab + c)·d.
TEST(Tape, ObserverReportsEachLeafOnceWhenItsGradientIsFinal) {
    Tensor a = from_vector({2}, {1, 2}).set_requires_grad();
    Tensor b = from_vector({2}, {3, 4}).set_requires_grad();
    Tensor c = from_vector({2}, {5, 6}).set_requires_grad();
    Tensor d = from_vector({2}, {7, 8}).set_requires_grad();
    Tensor loss = sum_all(mul(mul(add(mul(a, b), c), a), d));
    const size_t nodes = tape_size();
    std::vector<std::string> order;
    std::map<std::string, std::vector<float>> at_report;
    const std::map<const TensorImpl*, std::string> names = {{a.impl(), "a"}, {b.impl(), "b"}, {c.impl(), "c"}, {d.impl(), "d"}};
    size_t done = 0;
    backward(loss, BackwardObserver{[&](const Tensor& leaf) {
                                        const std::string& name = names.at(leaf.impl());
                                        order.push_back(name);
                                        at_report[name] = leaf.grad().to_vector();
                                    },
                                    [&] { ++done; }});
    EXPECT_EQ(done, nodes);
    ASSERT_EQ(order.size(), 4u);
    EXPECT_EQ(order[0], "d");
    EXPECT_EQ(std::set<std::string>(order.begin() + 1, order.end()), (std::set<std::string>{"a", "b", "c"}));
    for (const auto& [name, grad] : at_report) {
        const Tensor& leaf = name == "a" ? a : name == "b" ? b : name == "c" ? c : d;
        EXPECT_EQ(grad, leaf.grad().to_vector()) << name;
    }
    // By hand: a (2ab + c)d = (2·3 + 5)·7, (2·8 + 6)·8; b a²d; c a·d; d (ab + c)a.
    EXPECT_EQ(a.grad().to_vector(), (std::vector<float>{77, 176}));
    EXPECT_EQ(b.grad().to_vector(), (std::vector<float>{7, 32}));
    EXPECT_EQ(c.grad().to_vector(), (std::vector<float>{7, 16}));
    EXPECT_EQ(d.grad().to_vector(), (std::vector<float>{8, 28}));
}
