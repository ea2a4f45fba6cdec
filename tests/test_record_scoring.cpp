// How a record's rows were scored (results/scoring.h): kept in results.json, absent from records
// written before it was kept, refused by key when mistyped, and said in the report's sentence as
// the record has it, not as today's build would score. The shipped tables are checked against
// their own records: each says how it was scored, and its report says the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "data/text_file.h"
#include "json/json_file.h"
#include "report/pipeline_report.h"
#include "results/pipeline_results.h"
#include "tests/support/expect_error.h"

using namespace qdq;
using qdq::testing::expect_error;

namespace {

PipelineResults minimal_results() {
    const Metrics metrics{.task = TaskKind::classification,
                          .scores = {{"accuracy", 0.875}, {"eval_loss", 0.25}},
                          .counts = {{"eval_examples", 32}}};
    PipelineResults r;
    r.config.model.init = "model.h5";
    r.config.training.output_dir = "run";
    r.fp32 = r.qat = metrics;
    r.calibration.checkpoint = "run/fp32/model.h5";
    r.calibration.metric = "accuracy";
    r.calibration.fp32 = metrics;
    r.qat_from = "max";
    return r;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(RecordScoring, IsKeptInTheRecordAndAnOlderRecordHasNone) {
    const std::string source = "run/results.json";
    const nlohmann::json written = pipeline_results_to_json(minimal_results());
    EXPECT_EQ(written["scoring"], (nlohmann::json{{"quantized_products", "integer_codes"}, {"layer_norm", "exact"}}));
    EXPECT_EQ(pipeline_results_from_json(written, source).scoring, current_scoring());

    nlohmann::json older = written;
    older.erase("scoring");
    const PipelineResults read = pipeline_results_from_json(older, source);
    EXPECT_FALSE(read.scoring.has_value());
    EXPECT_EQ(pipeline_results_to_json(read), older);

    nlohmann::json floats = written;
    floats["scoring"] = {{"quantized_products", "dequantized_floats"}, {"layer_norm", "float_sums"}};
    EXPECT_EQ(pipeline_results_from_json(floats, source).scoring,
              (Scoring{QuantizedProducts::dequantized_floats, LayerNormForward::float_sums}));

    nlohmann::json broken = written;
    broken["scoring"]["quantized_products"] = "float";
    expect_error([&] { pipeline_results_from_json(broken, source); },
                 {source, "'scoring.quantized_products'", "dequantized_floats, integer_codes", "'float'"});
    broken = written;
    broken["scoring"].erase("layer_norm");
    expect_error([&] { pipeline_results_from_json(broken, source); }, {source, "'scoring.layer_norm'", "missing"});
    broken = written;
    broken["scoring"]["rounding"] = "even";
    expect_error([&] { pipeline_results_from_json(broken, source); }, {source, "scoring.rounding"});
}

TEST(RecordScoring, TheReportSaysHowTheRecordWasScored) {
    PipelineResults r = minimal_results();
    EXPECT_EQ(precision_sentence(r), "Every framework row ran its matrix products in FP32, those of two quantized "
                                     "operands on their integer codes, as the exported INT8 graph computes them.");
    r.scoring = Scoring{QuantizedProducts::dequantized_floats, LayerNormForward::float_sums};
    const std::string floats = precision_sentence(r);
    EXPECT_TRUE(contains(floats, "on their dequantized values (pytorch-quantization's fake quantization)")) << floats;
    EXPECT_FALSE(contains(floats, "on their integer codes,")) << floats;
    EXPECT_TRUE(contains(floats, "LayerNorm summed its mean and variance in float32")) << floats;
    r.scoring.reset();
    const std::string unknown = precision_sentence(r);
    EXPECT_TRUE(contains(unknown, "the record predates records saying which")) << unknown;
    EXPECT_FALSE(contains(unknown, "LayerNorm")) << unknown;

    r.config.training.bf16 = true;
    r.scoring = current_scoring();
    const std::string bf16 = precision_sentence(r);
    EXPECT_EQ(bf16.rfind("Training ran its matrix products in bf16", 0), 0u) << bf16;
    EXPECT_TRUE(contains(bf16, "every quantized row was scored with FP32 products, those of two quantized operands "
                               "on their integer codes, as the exported INT8 graph computes. ONNX Runtime rows"))
        << bf16;
    r.scoring->quantized_products = QuantizedProducts::dequantized_floats;
    EXPECT_TRUE(contains(precision_sentence(r), "FP32 products, those of two quantized operands on their dequantized"));
}

// A table's report is rebuilt from its records (`qdqtrain sweep --results`), so each shipped
// record must say how it was scored, and the committed report must say what its records say.
TEST(RecordScoring, EveryShippedTableSaysHowItsRecordsWereScored) {
    namespace fs = std::filesystem;
    std::set<std::string> tables;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(fs::path(QDQ_REPO_DIR) / "experiments")) {
        const fs::path& path = e.path();
        if (path.filename() != "results.json" || path.parent_path().parent_path().filename() != "runs") continue;
        const fs::path table = path.parent_path().parent_path().parent_path();
        const PipelineResults record = pipeline_results_from_json(read_json_file(path.string()), path.string());
        EXPECT_TRUE(record.scoring.has_value()) << path << " does not say how its rows were scored";
        const std::string report = read_text_file((table / "results.md").string());
        EXPECT_TRUE(contains(report, precision_sentence(record)))
            << table / "results.md" << " does not say what " << path << " does: " << precision_sentence(record);
        tables.insert(table.filename().string());
    }
    EXPECT_GE(tables.size(), 10u);
}
