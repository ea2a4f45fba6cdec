// Fake quantization (quant/fake_quant.h).
//  - Against PQ's FakeTensorQuantFunction restated in torch (fixtures/quant.json, written by
//    fixtures/make_quant.py): outputs and gradients equal, element for element, no tolerance.
//  - Against torch.fake_quantize_per_{tensor,channel}_affine, the function ONNX export's Q/DQ
//    pair computes. Every difference must be one of three explained kinds (counts as printed
//    by this test on the committed fixture, 8 cases, 2,400 elements of which 1,414 exact ties):
//      tie     the code differs by one where x·bound/amax lies within float rounding of k + 1/2:
//              torch rounds x·fl(1/fl(amax/bound)), PQ x·fl(bound/amax). 120 elements, all in
//              per_tensor_full_range (amax 1/π), the one case where those two factors differ;
//              about half its ties (those that round to even one way and up the other).
//      ulp     same code, values one ulp apart: torch multiplies the code by fl(amax/bound), PQ
//              divides it by fl(bound/amax). 433 elements.
//      band    gradient passes in torch, not in PQ: torch's mask is lo <= code <= bound on the
//              rounded code, so it reaches half a step past amax (a step and a half below -amax
//              in the full signed range); PQ's is |x| <= amax. 124 elements.
//    With amax = 127/64 both scales are exact and only band differences remain.
//  - The straight-through gradient explicitly: exactly dy inside and at ±amax, 0 outside; the
//    learned-range gradient against finite differences of the PACT clip it is defined by.
//  - Rounding ties to even, integer ranges, tiny amax, per-channel axes, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "quant/fake_quant.h"
#include "tests/support/expect_error.h"
#include "tests/support/fixture.h"
#include "tests/support/gradcheck.h"
#include "tests/support/quant_fixture_params.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

const Fixture& quant_fixture() {
    static const Fixture fixture("quant.json");
    return fixture;
}

const std::vector<std::string> kFakeQuantCases = {
    "per_tensor_exact_scale", "per_tensor_full_range", "per_tensor_narrow_range",
    "per_tensor_unsigned",    "per_tensor_4bit",       "per_channel_axis0",
    "per_channel_axis1",      "per_channel_last_axis"};


// The amax that applies to each element of x.
std::vector<float> amax_per_element(const Tensor& x, const Tensor& amax, const QuantParams& p) {
    std::vector<float> a = amax.to_vector(), out((size_t)x.numel());
    int64_t inner = 1;
    if (p.axis)
        for (int64_t d = *p.axis + 1; d < x.dim(); ++d) inner *= x.size(d);
    for (int64_t i = 0; i < x.numel(); ++i)
        out[(size_t)i] = p.axis ? a[(size_t)((i / inner) % x.size(*p.axis))] : a[0];
    return out;
}


struct FakeQuantRun {
    Tensor x, out, grad;
};

FakeQuantRun run_case(const nlohmann::json& c) {
    FakeQuantRun r;
    r.x = fixture_tensor(c, "x").set_requires_grad();
    r.out = fake_quant(r.x, fixture_tensor(c, "amax"), fixture_quant_params(c));
    backward(r.out, fixture_tensor(c, "w"));
    r.grad = r.x.grad();
    return r;
}

class FakeQuantFixture : public ::testing::TestWithParam<std::string> {};

}  // namespace

// +0 and −0 compare equal: the rounding shift gives +0 where torch.round(−0.3) gives −0.
TEST_P(FakeQuantFixture, EqualsPqElementForElement) {
    const nlohmann::json& c = quant_fixture().at(GetParam());
    FakeQuantRun r = run_case(c);
    std::vector<float> out = r.out.to_vector(), pq = fixture_tensor(c, "pq_out").to_vector();
    std::vector<float> grad = r.grad.to_vector(), pq_grad = fixture_tensor(c, "pq_grad").to_vector();
    std::vector<float> x = r.x.to_vector();
    int out_mismatches = 0, grad_mismatches = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] != pq[i] && out_mismatches++ < 5)
            ADD_FAILURE() << "x = " << x[i] << ": out " << out[i] << ", PQ " << pq[i];
        if (grad[i] != pq_grad[i] && grad_mismatches++ < 5)
            ADD_FAILURE() << "x = " << x[i] << ": grad " << grad[i] << ", PQ " << pq_grad[i];
    }
    EXPECT_EQ(out_mismatches, 0);
    EXPECT_EQ(grad_mismatches, 0);
}

TEST_P(FakeQuantFixture, DiffersFromTorchOnlyAtTiesByAnUlpOrPastAmax) {
    const nlohmann::json& c = quant_fixture().at(GetParam());
    QuantParams p = fixture_quant_params(c);
    FakeQuantRun r = run_case(c);
    std::vector<float> x = r.x.to_vector(), out = r.out.to_vector(), grad = r.grad.to_vector();
    std::vector<float> ref = fixture_tensor(c, "torch_out").to_vector();
    std::vector<float> ref_grad = fixture_tensor(c, "torch_grad").to_vector();
    std::vector<float> amax = amax_per_element(r.x, fixture_tensor(c, "amax"), p);
    const double bound = quant_bound(p), lo = quant_min(p);
    int ties = 0, exact_ties = 0, ulps = 0, band = 0, unexplained = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        float s = quant_bound(p) / amax[i];
        exact_ties += (x[i] * s) - std::floor(x[i] * s) == 0.5f;
        // x·bound/amax in double: exact to 2^-53, so its distance to k + 1/2 is the true one.
        double t = (double)x[i] * bound / amax[i];
        bool near_tie = std::fabs(t - (std::floor(t) + 0.5)) <= 0x1.0p-21 * std::fabs(t);
        double code = std::nearbyint((double)out[i] * bound / amax[i]);
        double ref_code = std::nearbyint((double)ref[i] * bound / amax[i]);
        if (code != ref_code) {
            ties++;
            if (!(near_tie && std::fabs(code - ref_code) == 1.0) && unexplained++ < 5)
                ADD_FAILURE() << "x = " << x[i] << ": code " << code << ", torch " << ref_code;
        } else if (out[i] != ref[i]) {
            ulps++;
            bool one_ulp = std::nextafter(out[i], ref[i]) == ref[i];
            if (!one_ulp && unexplained++ < 5)
                ADD_FAILURE() << "x = " << x[i] << ": out " << out[i] << ", torch " << ref[i];
        }
        if (grad[i] != ref_grad[i]) {
            band++;
            bool in_band = std::fabs(x[i]) > amax[i] && grad[i] == 0.0f &&
                           t >= lo - 0.5 - 1e-4 && t <= bound + 0.5 + 1e-4;
            if (!in_band && unexplained++ < 5)
                ADD_FAILURE() << "x = " << x[i] << ": grad " << grad[i] << ", torch " << ref_grad[i];
        }
    }
    EXPECT_EQ(unexplained, 0);
    if (GetParam() == "per_tensor_exact_scale") {
        EXPECT_EQ(ties + ulps, 0);
    }
    std::printf("%s: %zu elements, %d exact ties; differences from torch: %d tie, %d ulp, %d band\n",
                GetParam().c_str(), x.size(), exact_ties, ties, ulps, band);
}

INSTANTIATE_TEST_SUITE_P(Quant, FakeQuantFixture, ::testing::ValuesIn(kFakeQuantCases),
                         [](const auto& info) { return info.param; });

TEST(FakeQuantFixtureFile, EveryCaseIsRun) {
    for (const auto& [name, c] : quant_fixture().cases().items())
        EXPECT_NE(std::find(kFakeQuantCases.begin(), kFakeQuantCases.end(), name),
                  kFakeQuantCases.end())
            << "fixture case " << name << " is not run by any test";
}

// amax = 127 makes the scale 1, so x is the code before rounding.
TEST(FakeQuant, RoundsHalfToEvenAndClampsToTheRange) {
    Tensor x = from_vector({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -127.5f, 200, -200});
    Tensor amax = full({}, 127.0f);
    EXPECT_EQ(fake_quant(x, amax, {}).to_vector(),
              (std::vector<float>{0, 2, 2, 0, -2, -2, 126, -128, 127, -128}));
    QuantParams narrow{.narrow_range = true};
    EXPECT_EQ(fake_quant(x, amax, narrow).to_vector(),
              (std::vector<float>{0, 2, 2, 0, -2, -2, 126, -127, 127, -127}));
}

TEST(FakeQuant, IntegerRangesOfBitsSignAndNarrowRange) {
    EXPECT_EQ(quant_bound({}), 127.0f);
    EXPECT_EQ(quant_min({}), -128.0f);
    EXPECT_EQ(quant_min({.narrow_range = true}), -127.0f);
    EXPECT_EQ(quant_bound({.unsigned_ = true}), 255.0f);
    EXPECT_EQ(quant_min({.unsigned_ = true, .narrow_range = true}), 0.0f);
    EXPECT_EQ(quant_bound({.num_bits = 4}), 7.0f);
    EXPECT_EQ(quant_min({.num_bits = 4}), -8.0f);
    // amax 255 unsigned: scale 1, codes clamp to [0, 255].
    Tensor x = from_vector({4}, {0.0f, 254.5f, 255.4f, 300.0f});
    EXPECT_EQ(fake_quant(x, full({}, 255.0f), {.unsigned_ = true}).to_vector(),
              (std::vector<float>{0, 254, 255, 255}));
    Tensor y = from_vector({3}, {-9.0f, -7.6f, 7.6f});
    EXPECT_EQ(fake_quant(y, full({}, 7.0f), {.num_bits = 4}).to_vector(),
              (std::vector<float>{-8, -8, 7}));
    EXPECT_EQ(fake_quant(y, full({}, 7.0f), {.num_bits = 4, .narrow_range = true}).to_vector(),
              (std::vector<float>{-7, -7, 7}));
}

TEST(FakeQuant, AmaxAtMost2ToTheMinus24GivesZero) {
    Tensor x = from_vector({4}, {1e-8f, -3.0f, 0.5f, 1e-30f});
    for (float v : fake_quant(x, full({}, 0x1.0p-24f), {}).to_vector()) EXPECT_EQ(v, 0.0f);
    for (float v : fake_quant(x, full({}, 0.0f), {}).to_vector()) EXPECT_EQ(v, 0.0f);
    // Just above the threshold the scale is finite and 1e-8 (about 0.17 of amax) is kept.
    Tensor above = fake_quant(x, full({}, std::nextafter(0x1.0p-24f, 1.0f)), {});
    EXPECT_NE(above.to_vector()[0], 0.0f);
    // Per channel, only the tiny channel is zeroed.
    Tensor xc = from_vector({2, 2}, {0.5f, -0.25f, 0.5f, -0.25f});
    std::vector<float> yc = fake_quant(xc, from_vector({2}, {0.0f, 1.0f}), {.axis = 0}).to_vector();
    EXPECT_EQ(yc[0], 0.0f);
    EXPECT_EQ(yc[1], 0.0f);
    EXPECT_NEAR(yc[2], 0.5f, 1.0f / 254 + 1e-6f);  // half a step of amax 1
    EXPECT_NEAR(yc[3], -0.25f, 1.0f / 254 + 1e-6f);
}

// The rule stated once, with std::nearbyint, applied to every element of a per-channel tensor.
void expect_per_channel(const Tensor& x, const Tensor& amax, int64_t axis) {
    QuantParams p{.axis = axis};
    std::vector<float> y = fake_quant(x, amax, p).to_vector(), vx = x.to_vector();
    std::vector<float> a = amax_per_element(x, amax, {.axis = axis < 0 ? axis + x.dim() : axis});
    for (size_t i = 0; i < vx.size(); ++i) {
        float s = 127.0f / a[i];
        float product = vx[i] * s;
        float expected = std::min(std::max(std::nearbyint(product), -128.0f), 127.0f) / s;
        EXPECT_EQ(y[i], expected) << "element " << i << " (amax " << a[i] << ")";
    }
}

TEST(FakeQuant, PerChannelAxis0And1AndLast) {
    Tensor w = random_tensor({3, 40}, 1, -2.0f, 2.0f);
    expect_per_channel(w, from_vector({3}, {0.5f, 1.0f, 2.0f}), 0);
    expect_per_channel(w, from_vector({3, 1}, {0.5f, 1.0f, 2.0f}), 0);  // PQ's keepdims amax
    Tensor a = random_tensor({2, 4, 9}, 2, -3.0f, 3.0f);
    expect_per_channel(a, from_vector({4}, {0.3f, 3.0f, 1.0f, 2.5f}), 1);
    expect_per_channel(a, random_tensor({9}, 3, 0.5f, 2.0f), -1);
    expect_per_channel(a, random_tensor({9}, 3, 0.5f, 2.0f), 2);
}

TEST(FakeQuantBackward, GradientIsExactlyDyInsideAndAtAmaxAndZeroOutside) {
    Tensor x = from_vector({8}, {-2.0f, -1.5f, std::nextafter(-1.5f, 0.0f), 0.0f, 1.0f, 1.5f,
                                 std::nextafter(1.5f, 2.0f), 3.0f})
                   .set_requires_grad();
    Tensor g = random_tensor({8}, 4);
    backward(fake_quant(x, full({}, 1.5f), {}), g);
    std::vector<float> vg = g.to_vector(), gx = x.grad().to_vector();
    std::vector<float> expected = {0, vg[1], vg[2], vg[3], vg[4], vg[5], 0, 0};
    EXPECT_EQ(gx, expected);
}

TEST(FakeQuantBackward, AccumulatesIntoExistingGradients) {
    Tensor x = from_vector({3}, {0.5f, 2.0f, -0.25f}).set_requires_grad();
    Tensor amax = full({}, 1.0f).set_requires_grad();
    Tensor g = from_vector({3}, {1.0f, 2.0f, 4.0f});
    backward(fake_quant(x, amax, {.learn_amax = true}), g);
    backward(fake_quant(x, amax, {.learn_amax = true}), g);
    EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{2, 0, 8}));
    EXPECT_EQ(amax.grad().item(), 4.0f);
    Tensor y = from_vector({2}, {0.5f, 2.0f}).set_requires_grad();
    backward(add(fake_quant(y, full({}, 1.0f), {}), fake_quant(y, full({}, 1.0f), {})),
             from_vector({2}, {1.0f, 1.0f}));
    EXPECT_EQ(y.grad().to_vector(), (std::vector<float>{2, 0}));
}

TEST(FakeQuantBackward, PerChannelMasksUseEachChannelsAmax) {
    // [2, 3]: axis 0 with amax {1, 2}; axis 1 with amax {0.5, 1.5, 3}.
    std::vector<float> values = {-1.0f, 1.5f, 2.5f, 0.5f, -2.0f, 2.5f};
    Tensor g = from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor x0 = from_vector({2, 3}, values).set_requires_grad();
    backward(fake_quant(x0, from_vector({2}, {1.0f, 2.0f}), {.axis = 0}), g);
    EXPECT_EQ(x0.grad().to_vector(), (std::vector<float>{1, 0, 0, 4, 5, 0}));
    Tensor x1 = from_vector({2, 3}, values).set_requires_grad();
    backward(fake_quant(x1, from_vector({3}, {0.5f, 1.5f, 3.0f}), {.axis = 1}), g);
    EXPECT_EQ(x1.grad().to_vector(), (std::vector<float>{0, 2, 3, 4, 0, 6}));
}

// PQ's learned range: y = fake_quant(clip(x, −a, a)), dx open-interval mask, da from the clip.
TEST(FakeQuantLearnedAmax, ClipsBeforeQuantizingInTheFullSignedRange) {
    Tensor x = from_vector({3}, {-1.01f, -2.0f, 2.0f});
    EXPECT_EQ(fake_quant(x, full({}, 1.0f), {}).to_vector()[0], -128.0f / 127.0f);
    std::vector<float> learned = fake_quant(x, full({}, 1.0f), {.learn_amax = true}).to_vector();
    EXPECT_EQ(learned, (std::vector<float>{-1.0f, -1.0f, 1.0f}));
}

TEST(FakeQuantLearnedAmax, GradientsAreTheClips) {
    std::vector<float> values = {-3.0f, -1.25f, -1.0f, -0.5f, 0.0f, 0.75f, 1.0f, 1.25f, 2.0f};
    const float a = 1.0f;
    Tensor x = from_vector({9}, values).set_requires_grad();
    Tensor amax = full({}, a).set_requires_grad();
    Tensor w = random_tensor({9}, 5);
    backward(fake_quant(x, amax, {.learn_amax = true}), w);
    std::vector<float> vw = w.to_vector(), gx = x.grad().to_vector();
    double da = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        bool inside = values[i] > -a && values[i] < a;  // open: x = ±a sends its gradient to amax
        EXPECT_EQ(gx[i], inside ? vw[i] : 0.0f) << "x = " << values[i];
        da += values[i] >= a ? vw[i] : values[i] <= -a ? -vw[i] : 0.0;
    }
    EXPECT_EQ(amax.grad().item(), (float)da);
}

// At a zero range a zero input is at both of the clip's bounds: PQ's Clip sends its gradient to
// the upper bound and to the lower, which cancel in amax's (d/da of clamp(0, −a, a) is 0). The
// others add w·sign(x), the forward difference of Σ w·clamp(x, −a, a) from a = 0.
TEST(FakeQuantLearnedAmax, AZeroInputAddsNothingToAZeroRangesGradient) {
    Tensor x = from_vector({4}, {-1.0f, 0.0f, 0.0f, 2.0f}).set_requires_grad();
    Tensor amax = full({}, 0.0f).set_requires_grad();
    Tensor w = from_vector({4}, {0.5f, 3.0f, -7.0f, 0.25f});
    backward(fake_quant(x, amax, {.learn_amax = true}), w);
    EXPECT_EQ(amax.grad().item(), -0.5f + 0.25f);
    EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 0, 0, 0}));
}

// d/da Σ w·clamp(x, −a, a) by central differences, with no x within h of ±a (the kinks).
TEST(FakeQuantLearnedAmax, AmaxGradientMatchesFiniteDifferencesOfTheClip) {
    std::vector<float> values = {-3.0f, -1.25f, -0.5f, 0.0f, 0.75f, 1.25f, 2.0f, -0.99f, 1.01f};
    const double a = 1.0, h = 1e-3;
    Tensor x = from_vector({9}, values).set_requires_grad();
    Tensor amax = full({}, (float)a).set_requires_grad();
    Tensor w = random_tensor({9}, 5);
    backward(fake_quant(x, amax, {.learn_amax = true}), w);
    std::vector<float> vw = w.to_vector();
    auto clipped_sum = [&](double amax_value) {
        double s = 0;
        for (size_t i = 0; i < values.size(); ++i)
            s += vw[i] * std::clamp((double)values[i], -amax_value, amax_value);
        return s;
    };
    // The clip is linear in a between kinks, so the difference is exact up to double rounding.
    EXPECT_NEAR(amax.grad().item(), (clipped_sum(a + h) - clipped_sum(a - h)) / (2 * h), 1e-6);
}

TEST(FakeQuantLearnedAmax, IsPerTensorOnlyAndAmaxGradientNeedsIt) {
    Tensor x = random_tensor({2, 3}, 6);
    expect_error([&] { fake_quant(x, from_vector({2}, {1, 1}), {.axis = 0, .learn_amax = true}); },
                 {"fake_quant", "learn_amax", "per tensor"});
    Tensor amax = full({}, 1.0f).set_requires_grad();
    expect_error([&] { fake_quant(x, amax, {}); }, {"fake_quant", "requires grad", "learn_amax"});
}

TEST(FakeQuantErrors, BadAmaxAndInputs) {
    Tensor x = random_tensor({2, 3}, 7);
    expect_error([&] { fake_quant(x, full({}, NAN), {}); }, {"amax[0]", "not calibrated"});
    expect_error([&] { fake_quant(x, full({}, -1.0f), {}); }, {"amax[0]", ">= 0"});
    expect_error([&] { fake_quant(x, full({}, INFINITY), {}); }, {"amax[0]", "finite"});
    expect_error([&] { fake_quant(x, from_vector({2}, {1, 1}), {}); }, {"2 values", "per tensor"});
    expect_error([&] { fake_quant(x, from_vector({2}, {1, 1}), {.axis = 1}); },
                 {"2 values", "expected 3", "per channel"});
    expect_error([&] { fake_quant(x, full({}, 1.0f), {.axis = 2}); }, {"fake_quant", "axis 2"});
    expect_error([&] { fake_quant(x, full({}, 1.0f), {.unsigned_ = true}); },
                 {"negative", "unsigned"});
    expect_error([&] { fake_quant(x, full({}, 1.0f), {.num_bits = 1}); }, {"num_bits", "[2, 16]"});
    expect_error([&] { fake_quant(from_ints({2}, {1, 2}), full({}, 1.0f), {}); }, {"float32"});
}
