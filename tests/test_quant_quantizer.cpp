// QuantDescriptor (PQ's defaults, JSON round trip, strict errors) and TensorQuantizer (one
// mode at a time, calibration into the amax buffer in place, refusal of an uncalibrated amax).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/tape.h"
#include "quant/fake_quant.h"
#include "quant/tensor_quantizer.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using namespace qdq::testing;

namespace {


QuantDescriptor parse(const std::string& text) {
    QuantDescriptor d;
    from_json(nlohmann::json::parse(text), d);
    return d;
}

void expect_same(const QuantDescriptor& a, const QuantDescriptor& b) {
    EXPECT_EQ(a.num_bits, b.num_bits);
    EXPECT_EQ(a.axis, b.axis);
    EXPECT_EQ(a.unsigned_, b.unsigned_);
    EXPECT_EQ(a.narrow_range, b.narrow_range);
    EXPECT_EQ(a.calib_method, b.calib_method);
    EXPECT_EQ(a.amax, b.amax);
    EXPECT_EQ(a.learn_amax, b.learn_amax);
}

}  // namespace

// PQ's ScaledQuantDescriptor(): num_bits 8, axis None, unsigned False, narrow_range False,
// calib_method "max", amax None, learn_amax False; QUANT_DESC_8BIT_LINEAR_WEIGHT_PER_ROW: axis 0.
TEST(QuantDescriptor, DefaultsArePqs) {
    QuantDescriptor d;
    EXPECT_EQ(d.num_bits, 8);
    EXPECT_FALSE(d.axis.has_value());
    EXPECT_FALSE(d.unsigned_);
    EXPECT_FALSE(d.narrow_range);
    EXPECT_EQ(d.calib_method, CalibMethod::Max);
    EXPECT_FALSE(d.amax.has_value());
    EXPECT_FALSE(d.learn_amax);
    expect_same(parse("{}"), d);
    EXPECT_EQ(linear_weight_descriptor().axis, std::optional<int64_t>(0));
}

TEST(QuantDescriptor, JsonRoundTrip) {
    QuantDescriptor a;
    a.num_bits = 4;
    a.axis = -1;
    a.unsigned_ = true;
    a.narrow_range = true;
    a.amax = std::vector<float>{0.1f, 2.5f, 3e-8f};
    nlohmann::json j = a;
    EXPECT_EQ(j.at("unsigned"), true);
    EXPECT_EQ(j.at("calib_method"), "max");
    expect_same(j.get<QuantDescriptor>(), a);
    QuantDescriptor b;
    b.calib_method = CalibMethod::Histogram;
    b.amax = std::vector<float>{6.25f};
    b.learn_amax = true;
    nlohmann::json jb = b;
    EXPECT_EQ(jb.at("amax"), 6.25);
    EXPECT_TRUE(jb.at("axis").is_null());
    expect_same(jb.get<QuantDescriptor>(), b);
    EXPECT_EQ(nlohmann::json(jb.get<QuantDescriptor>()), jb);
    EXPECT_EQ(nlohmann::json(parse(R"({"axis": null, "amax": null})")), nlohmann::json(QuantDescriptor{}));
}

TEST(QuantDescriptor, JsonErrorsNameTheKey) {
    auto bad = [](const std::string& text, const std::vector<std::string>& parts) {
        expect_error([&] { parse(text); }, parts);
    };
    bad(R"({"num_bit": 8})", {"'num_bit'", "not a known setting"});
    bad(R"({"num_bits": 8.5})", {"'num_bits'", "integer"});
    bad(R"({"num_bits": 1})", {"'num_bits'", "[2, 16]"});
    bad(R"({"num_bits": 17})", {"'num_bits'", "[2, 16]"});
    bad(R"({"axis": "0"})", {"'axis'", "integer or null"});
    bad(R"({"axis": [0]})", {"'axis'", "integer or null"});
    bad(R"({"axis": 0.5})", {"'axis'", "integer or null"});
    bad(R"({"unsigned": 1})", {"'unsigned'", "true or false"});
    bad(R"({"narrow_range": "yes"})", {"'narrow_range'", "true or false"});
    bad(R"({"learn_amax": null})", {"'learn_amax'", "true or false"});
    bad(R"({"calib_method": "entropy"})", {"'calib_method'", "max, histogram", "'entropy'"});
    bad(R"({"calib_method": 1})", {"'calib_method'"});
    bad(R"({"amax": "1"})", {"'amax'", "number"});
    bad(R"({"amax": [1, "2"]})", {"'amax'", "numbers"});
    bad(R"({"amax": -1})", {"amax", ">= 0"});
    bad(R"({"amax": [1, 2]})", {"per-tensor amax is one value"});
    bad(R"({"axis": 0, "learn_amax": true})", {"learn_amax", "per tensor"});
    bad(R"({"axis": 0, "calib_method": "histogram"})", {"histogram", "per tensor"});
    bad(R"([8])", {"JSON object"});
}

TEST(TensorQuantizer, ModesDisabledCalibratingQuantizing) {
    TensorQuantizer q(QuantDescriptor{});
    EXPECT_EQ(q.mode, QuantMode::Quantizing);  // PQ's default state
    EXPECT_EQ(q.amax.shape(), Shape{});
    EXPECT_TRUE(std::isnan(q.amax.item()));
    Tensor x = from_vector({4}, {0.3f, -1.7f, 0.9f, 1.2f});
    expect_error([&] { q.quantize(x); }, {"amax", "not calibrated"});
    q.mode = QuantMode::Disabled;
    EXPECT_TRUE(q.quantize(x).same_as(x));
    q.mode = QuantMode::Calibrating;
    EXPECT_TRUE(q.quantize(x).same_as(x));
    q.quantize(from_vector({1}, {-2.0f}));
    Tensor buffer = q.amax;  // what a Module registers
    q.load_calib_amax();
    EXPECT_EQ(buffer.item(), 2.0f);
    q.mode = QuantMode::Quantizing;
    std::vector<float> expected = fake_quant(x, full({}, 2.0f), {}).to_vector();
    EXPECT_EQ(q.quantize(x).to_vector(), expected);
}

TEST(TensorQuantizer, PerChannelWeightsWithPqsKeepdimsAmax) {
    TensorQuantizer q(linear_weight_descriptor(), {3, 1});
    Tensor w = random_tensor({3, 5}, 1, -2.0f, 2.0f);
    q.mode = QuantMode::Calibrating;
    q.quantize(w);
    q.load_calib_amax();
    std::vector<float> vw = w.to_vector(), amax = q.amax.to_vector();
    for (int r = 0; r < 3; ++r) {
        float m = 0;
        for (int k = 0; k < 5; ++k) m = std::max(m, std::fabs(vw[(size_t)(r * 5 + k)]));
        EXPECT_EQ(amax[(size_t)r], m);
    }
    q.mode = QuantMode::Quantizing;
    EXPECT_EQ(q.quantize(w).to_vector(),
              fake_quant(w, from_vector({3}, amax), {.axis = 0}).to_vector());
    expect_error([&] { TensorQuantizer bad(linear_weight_descriptor()); }, {"amax shape"});
    expect_error([&] { TensorQuantizer bad(QuantDescriptor{}, {2}); }, {"one value", "[2]"});
}

TEST(TensorQuantizer, HistogramNeedsAnExplicitMethod) {
    QuantDescriptor d;
    d.calib_method = CalibMethod::Histogram;
    TensorQuantizer q(d);
    q.mode = QuantMode::Calibrating;
    q.quantize(random_tensor({5000}, 2, -1.0f, 1.0f));
    expect_error([&] { q.load_calib_amax(); }, {"histogram", "needs a method"});
    const auto& calib = std::get<HistogramCalibrator>(q.calibrator);
    q.load_calib_amax({AmaxMethod::Percentile, 99.0});
    EXPECT_EQ(q.amax.item(), percentile_amax(calib, 99.0));
    q.load_calib_amax({AmaxMethod::Mse});
    EXPECT_EQ(q.amax.item(), mse_amax(calib));
    q.load_calib_amax({AmaxMethod::Entropy});
    EXPECT_EQ(q.amax.item(), entropy_amax(calib));
    TensorQuantizer max_quantizer(QuantDescriptor{});
    expect_error([&] { max_quantizer.load_calib_amax({AmaxMethod::Mse}); },
                 {"max calibrator", "no histogram method"});
}

TEST(TensorQuantizer, FixedAndLearnedAmax) {
    QuantDescriptor fixed = linear_weight_descriptor();
    fixed.amax = std::vector<float>{1.5f};
    TensorQuantizer per_channel(fixed, {4});
    EXPECT_EQ(per_channel.amax.to_vector(), (std::vector<float>(4, 1.5f)));
    fixed.amax = std::vector<float>{1.0f, 2.0f, 3.0f};
    EXPECT_EQ(TensorQuantizer(fixed, {3, 1}).amax.to_vector(), (std::vector<float>{1, 2, 3}));
    QuantDescriptor learned;
    learned.amax = std::vector<float>{1.0f};
    learned.learn_amax = true;
    TensorQuantizer q(learned);
    ASSERT_TRUE(q.amax.requires_grad());
    Tensor x = from_vector({3}, {2.0f, 0.5f, -3.0f}).set_requires_grad();
    backward(q.quantize(x), from_vector({3}, {1.0f, 1.0f, 0.5f}));
    EXPECT_EQ(q.amax.grad().item(), 0.5f);  // 1 for x = 2, −0.5 for x = −3
    EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0, 1, 0}));
    QuantDescriptor wrong_count = linear_weight_descriptor();
    wrong_count.amax = std::vector<float>{1, 2};
    expect_error([&] { TensorQuantizer bad(wrong_count, {3}); }, {"desc.amax has 2 values", "[3]"});
}
