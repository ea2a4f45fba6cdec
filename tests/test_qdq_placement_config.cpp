// The quantization section (qdqbert/qdq_placement.h): QDQBERT's recipe as the defaults, a
// descriptor given in part keeping the rest, a round trip through JSON, and each bad key named.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qdqbert/qdq_placement.h"
#include "tests/support/expect_error.h"

using namespace qdq;
using qdq::testing::expect_error;

namespace {

QuantizationConfig config(const nlohmann::json& j = nlohmann::json::object()) {
    return quantization_config_from_json(j, "run.json");
}

}  // namespace

TEST(QdqPlacementConfig, DefaultsAreTheRecipesAndRoundTrip) {
    QuantizationConfig c = config();
    EXPECT_EQ(c.input.calib_method, CalibMethod::Histogram);
    EXPECT_FALSE(c.input.axis);
    EXPECT_EQ(c.weight.axis, std::optional<int64_t>(0));
    EXPECT_EQ(c.calibrator.method, AmaxMethod::Percentile);
    EXPECT_EQ(c.calibrator.percentile, 99.99);
    EXPECT_TRUE(c.quantize_attention && c.quantize_residual);
    nlohmann::json j = {{"per_tensor_weights", true}, {"disable", {"_weight_"}}, {"disable_layers", {1}},
                        {"calibrator", "mse"}, {"fuse_qkv", true}, {"clip_gelu", 10.0}};
    nlohmann::json once = quantization_config_to_json(config(j));
    EXPECT_EQ(quantization_config_to_json(config(once)), once);
    EXPECT_EQ(once["weight"]["axis"], nullptr);
    EXPECT_EQ(once["clip_gelu"], 10.0);
    // A descriptor given in part keeps the defaults of the keys it leaves out.
    QuantizationConfig w4a4 = config({{"input", {{"num_bits", 4}}}, {"weight", {{"num_bits", 4}}}});
    EXPECT_EQ(w4a4.input.num_bits, 4);
    EXPECT_EQ(w4a4.input.calib_method, CalibMethod::Histogram);
    EXPECT_EQ(w4a4.weight.num_bits, 4);
    EXPECT_EQ(w4a4.weight.axis, std::optional<int64_t>(0));
    EXPECT_FALSE(config({{"weight", {{"axis", nullptr}}}}).weight.axis);
}

TEST(QdqPlacementConfig, ErrorsNameTheKey) {
    using J = nlohmann::json;
    const std::vector<std::pair<J, std::string>> cases = {
        {{{"fuse_qvk", true}}, "quantization.fuse_qvk"},
        {{{"per_tensor_weights", "yes"}}, "quantization.per_tensor_weights"},
        {{{"quantize_residual", 1}}, "quantization.quantize_residual"},
        {{{"disable", "layer.0"}}, "quantization.disable"},
        {{{"disable", {"("}}}, "quantization.disable"},
        {{{"disable", {"ok", 3}}}, "quantization.disable"},
        {{{"disable_layers", {1.5}}}, "quantization.disable_layers"},
        {{{"disable_layers", {"0"}}}, "quantization.disable_layers"},
        {{{"disable_layers", {-1}}}, "quantization.disable_layers"},
        {{{"calibrator", "minmax"}}, "quantization.calibrator"},
        {{{"calibrator", 1}}, "quantization.calibrator"},
        {{{"percentile", 0}}, "quantization.percentile"},
        {{{"percentile", 100.5}}, "quantization.percentile"},
        {{{"calibration_examples", 0}}, "quantization.calibration_examples"},
        {{{"calibration_examples", 1.5}}, "quantization.calibration_examples"},
        {{{"clip_gelu", -1}}, "quantization.clip_gelu"},
        {{{"clip_gelu", "4"}}, "quantization.clip_gelu"},
        {{{"input", {{"axis", 0}}}}, "quantization.input"},
        {{{"input", {{"bits", 8}}}}, "quantization.input"},
        {{{"weight", {{"num_bits", 1}}}}, "quantization.weight"},
        {{{"calibrator", "entropy"}, {"input", {{"calib_method", "max"}}}}, "quantization.calibrator"},
        {J::array(), "'quantization'"},
    };
    for (const auto& [j, key] : cases)
        expect_error([&] { quantization_config_from_json(j, "run.json"); }, {"run.json", key});
}
