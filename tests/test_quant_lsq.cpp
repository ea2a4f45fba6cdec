// LSQ, the learned step size (quant/fake_quant.h, learn_step_size):
//  - forward and both gradients against torch's autograd of the paper's formula
//    (fixtures/lsq.json, written by fixtures/make_lsq.py), per tensor and per channel, at 8, 4
//    and 2 bits, signed, narrow and unsigned. The output is the same float32 arithmetic, so it
//    must be equal; the input gradient is dy passed through, where torch's chain rule multiplies
//    and divides by the scale (an ulp or two); the step gradient is torch's float32 sum against
//    our double one.
//  - the forward is plain fake quantization's, bit for bit;
//  - the step gradient by hand on a few values, with the gradient scale 1/sqrt(N·Q_P), and
//    against central differences where the output is smooth in the step (every x clipped);
//  - the descriptor key, its exclusion of learn_amax, and the quantizer's learned amax.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "quant/fake_quant.h"
#include "quant/tensor_quantizer.h"
#include "tests/support/expect_error.h"
#include "tests/support/fixture.h"
#include "tests/support/gradcheck.h"
#include "tests/support/quant_fixture_params.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

const Fixture& lsq_fixture() {
    static const Fixture fixture("lsq.json");
    return fixture;
}

QuantParams lsq_params(const nlohmann::json& c) {
    QuantParams params = fixture_quant_params(c);
    params.learn_step_size = true;
    return params;
}

const std::string kLsqCases[] = {"per_tensor_8bit",       "per_tensor_4bit",         "per_tensor_4bit_narrow",
                                 "per_tensor_4bit_unsigned", "per_channel_rows_8bit", "per_channel_rows_4bit",
                                 "per_channel_middle_4bit", "per_channel_last_2bit"};

}  // namespace

class LsqFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(LsqFixture, EqualsTorchAutogradOfThePapersFormula) {
    const nlohmann::json& c = lsq_fixture().at(GetParam());
    Tensor x = fixture_tensor(c, "x0").set_requires_grad();
    Tensor amax = fixture_tensor(c, "x1").set_requires_grad();
    Tensor y = fake_quant(x, amax, lsq_params(c));
    backward(y, fixture_tensor(c, "w"));
    EXPECT_EQ(y.to_vector(), fixture_tensor(c, "out").to_vector());
    expect_close(x.grad(), fixture_tensor(c, "grad_x0"), 1e-6, 1e-6);
    expect_close(amax.grad(), fixture_tensor(c, "grad_x1"), 2e-5, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Quant, LsqFixture, ::testing::ValuesIn(kLsqCases),
                         [](const auto& info) { return info.param; });

TEST(LsqFixtureFile, EveryCaseIsRun) {
    EXPECT_EQ(lsq_fixture().cases().size(), std::size(kLsqCases));
}

TEST(Lsq, ForwardIsPlainFakeQuantization) {
    Tensor x = random_tensor({3, 50}, 11, -4.0f, 4.0f);
    Tensor amax = from_vector({3}, {0.5f, 2.0f, 3.5f});
    for (int bits : {2, 4, 8}) {
        QuantParams plain{.num_bits = bits, .axis = 0};
        QuantParams lsq = plain;
        lsq.learn_step_size = true;
        EXPECT_EQ(fake_quant(x, amax, lsq).to_vector(), fake_quant(x, amax, plain).to_vector()) << bits;
    }
}

// 4 bits, amax 7: Q_P = 7, s = 1, so v = x. N = 4, g = 1/sqrt(4·7).
TEST(Lsq, StepGradientByHand) {
    Tensor x = from_vector({4}, {0.25f, -2.5f, 9.0f, -20.0f}).set_requires_grad();
    Tensor amax = full({}, 7.0f).set_requires_grad();
    backward(fake_quant(x, amax, {.num_bits = 4, .learn_step_size = true}), from_vector({4}, {1, 2, 3, 4}));
    // round(v) − v inside: 0 − 0.25 and −2 + 2.5 (ties to even); past the ends: Q_P = 7, −Q_N = −8.
    const double sum = 1 * -0.25 + 2 * 0.5 + 3 * 7.0 + 4 * -8.0;
    EXPECT_FLOAT_EQ(amax.grad().item(), (float)(sum / std::sqrt(4.0 * 7.0) / 7.0));
    EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{1, 2, 0, 0}));
}

TEST(Lsq, DescriptorKeyAndItsExclusions) {
    QuantDescriptor d = quant_descriptor_from_json(nlohmann::json::parse(R"({"axis": 0, "learn_step_size": true})"), "q.json");
    EXPECT_TRUE(d.learn_step_size);
    nlohmann::json written;
    to_json(written, d);
    EXPECT_EQ(written.at("learn_step_size"), true);
    expect_error([] { quant_descriptor_from_json(nlohmann::json::parse(R"({"learn_amax": true, "learn_step_size": true})"), "q.json", "quantization.input"); },
                 {"q.json", "quantization.input", "learn_step_size", "choose one"});
    expect_error([] { quant_descriptor_from_json(nlohmann::json::parse(R"({"learn_step_size": 1})"), "q.json"); },
                 {"learn_step_size", "true or false"});
    Tensor amax = full({}, 1.0f).set_requires_grad();
    expect_error([&] { fake_quant(full({2}, 0.5f), amax, {.learn_amax = true, .learn_step_size = true}); },
                 {"fake_quant", "exclude each other"});
}

TEST(Lsq, QuantizerLearnsAPerChannelAmax) {
    QuantDescriptor d = linear_weight_descriptor();
    d.learn_step_size = true;
    d.amax = std::vector<float>{1.0f, 2.0f};
    TensorQuantizer q = TensorQuantizer::for_weight(d, Tensor{}, {2, 1});
    ASSERT_TRUE(q.amax.requires_grad());
    Tensor w = from_vector({2, 3}, {0.3f, -1.5f, 0.9f, 2.5f, -0.1f, 1.0f}).set_requires_grad();
    backward(q.quantize(w), full({2, 3}, 1.0f));
    std::vector<float> g = q.amax.grad().to_vector();
    ASSERT_EQ(g.size(), 2u);
    EXPECT_NE(g[0], 0.0f);
    EXPECT_NE(g[1], 0.0f);
}

// Where every x lies past the range, y = s·Q_P or s·(−Q_N) is linear in the step, so the step's
// true derivative exists: LSQ's gradient is it times the gradient scale g (central differences).
TEST(Lsq, StepGradientIsTheScaledDerivativeWhereTheOutputIsSmooth) {
    const std::vector<float> values = {5.0f, -6.5f, 9.0f, -3.2f, 4.4f, -7.0f};
    Tensor x = from_vector({2, 3}, values);
    Tensor w = random_tensor({2, 3}, 12);
    const QuantParams params{.num_bits = 4, .learn_step_size = true};
    const double a = 2.0, h = 1e-2;
    Tensor amax = full({}, (float)a).set_requires_grad();
    backward(fake_quant(x, amax, params), w);
    auto weighted_sum = [&](double amax_value) {
        const std::vector<float> y = fake_quant(x, full({}, (float)amax_value), {.num_bits = 4}).to_vector();
        double s = 0;
        for (size_t i = 0; i < y.size(); ++i) s += (double)w.to_vector()[i] * y[i];
        return s;
    };
    const double derivative = (weighted_sum(a + h) - weighted_sum(a - h)) / (2 * h);
    const double g = 1.0 / std::sqrt(6.0 * 7.0);
    EXPECT_NEAR(amax.grad().item(), g * derivative, 1e-5);
    EXPECT_NE(derivative, 0.0);
}
