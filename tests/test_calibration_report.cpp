// calibration_report.md's outlier column and section: the ratio of the max calibrator's range to
// the percentile-99.99 calibrator's, worked out here from ranges chosen by hand, and where each
// quantizer sits in the layer by its QDQBERT name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "report/calibration_report.h"
#include "tests/support/temp_dir.h"

using namespace qdq;
using qdq::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// An activation quantizer whose max and percentile-99.99 ranges are given.
QuantizerStats activation(const std::string& name, double max, double p9999) {
    QuantizerStats q{.name = name};
    q.histogram = ActivationHistogram{max / 4, {10, 5, 1, 1}, max};
    q.methods = {{"max", {max, 0.0, 30}}, {"percentile-99.99", {p9999, 1e-4, 35}}};
    return q;
}

}  // namespace

TEST(CalibrationReport, OutlierRatioIsMaxOverThePercentileRange) {
    EXPECT_DOUBLE_EQ(*outlier_ratio(activation("a", 12, 2)), 6.0);
    QuantizerStats only_max = activation("b", 12, 2);
    only_max.methods.erase("percentile-99.99");
    EXPECT_FALSE(outlier_ratio(only_max));
    EXPECT_FALSE(outlier_ratio(activation("c", 12, 0)));
    EXPECT_FALSE(outlier_ratio(QuantizerStats{.name = "w", .weight = WeightRangeStats{1, 0.5, 0, 40}}));
}

// Quantizers of one tensor agree: the residual stream feeds Q, K, V and the attention's residual
// add (one LayerNorm output), and the FFN and its residual add (the next).
TEST(CalibrationReport, PlacesQuantizersByTheTensorTheyRead) {
    const std::string layer = "bert.encoder.layer.3.";
    auto reported = [&](const std::string& quantizer) { return quantizer_place(layer + quantizer).where_outliers_are_reported; };
    for (const char* residual : {"attention.self.query._input_quantizer", "attention.self.key._input_quantizer",
                                 "attention.self.value._input_quantizer", "attention.output.add_residual_input_quantizer",
                                 "intermediate.dense._input_quantizer", "output.add_residual_input_quantizer",
                                 "output.add_local_input_quantizer"})
        EXPECT_TRUE(reported(residual)) << residual;
    for (const char* other : {"attention.output.add_local_input_quantizer", "attention.output.dense._input_quantizer",
                              "attention.self.matmul_q_input_quantizer", "attention.self.matmul_a_input_quantizer",
                              "output.dense._input_quantizer"})
        EXPECT_FALSE(reported(other)) << other;
    EXPECT_EQ(quantizer_place(layer + "output.dense._input_quantizer").description, "FFN intermediate, after GELU");
    EXPECT_EQ(quantizer_place(layer + "output.add_local_input_quantizer").description,
              "FFN output, in the sum before the FFN's LayerNorm");
    EXPECT_EQ(quantizer_place(layer + "attention.self.query._input_quantizer").description,
              quantizer_place(layer + "attention.self.value._input_quantizer").description);
}

TEST(CalibrationReport, NamesTheOutliersAndWhereTheySit) {
    TempDir dir;
    CalibrationResult r;
    r.checkpoint = "fp32/model.h5";
    r.metric = "accuracy";
    auto accuracy = [](double a) { return Metrics{.task = TaskKind::classification, .scores = {{"accuracy", a}}}; };
    r.fp32 = accuracy(0.9);
    r.methods = {{"max", accuracy(0.85), "max/model.h5"}, {"percentile-99.99", accuracy(0.88), "p/model.h5"}};
    r.best = "percentile-99.99";
    const std::string layer = "bert.encoder.layer.3.";
    r.quantizers = {activation(layer + "output.add_local_input_quantizer", 24, 2),          // 12: an outlier
                    activation(layer + "intermediate.dense._input_quantizer", 3, 2),       // 1.5
                    activation(layer + "output.dense._input_quantizer", 10.5, 1.5),        // 7: an outlier
                    {.name = layer + "output.dense._weight_quantizer", .weight = WeightRangeStats{1, 0.5, 0, 40}}};
    fs::create_directories(dir.path() / "plots");
    write_calibration_report(dir.path().string(), r);
    std::string md;
    std::getline(std::ifstream(dir.path() / "calibration_report.md"), md, '\0');
    EXPECT_NE(md.find("| clipped | SQNR dB | max ÷ p99.99 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| 1.5 |\n"), std::string::npos) << md;  // the ratio column of the FFN input
    EXPECT_NE(md.find("## Outliers"), std::string::npos) << md;
    EXPECT_NE(md.find(": 2 of 3. 1 of them sit where the literature puts"), std::string::npos) << md;
    // Largest ratio first, each with its place.
    const size_t ffn = md.find("| `" + layer + "output.add_local_input_quantizer` | 12.0 | FFN output");
    const size_t query = md.find("| `" + layer + "output.dense._input_quantizer` | 7.0 | FFN intermediate");
    ASSERT_NE(ffn, std::string::npos) << md;
    ASSERT_NE(query, std::string::npos) << md;
    EXPECT_LT(ffn, query);
    EXPECT_EQ(md.find("intermediate.dense._input_quantizer` | 1.5"), std::string::npos) << md;
}
