// The pipeline's accuracy budget (stages/accuracy_budget.h): the search for the float set on a
// hand-made sweep, and on the tiny task a budget of 0 points under 2-bit quantization, checked
// against the validation halves it is defined on and the QAT stage that starts from it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>

#include "io/hdf5_weights.h"
#include "stages/accuracy_budget.h"
#include "stages/pipeline.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/task.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

TEST(AccuracyBudget, ExactNamePatternsMatchOnlyTheirNames) {
    const std::vector<std::string> patterns =
        exact_name_patterns({"bert.encoder.layer.0.output.dense._input_quantizer"});
    ASSERT_EQ(patterns.size(), 1u);
    const std::regex r(patterns[0]);
    EXPECT_TRUE(std::regex_search("bert.encoder.layer.0.output.dense._input_quantizer", r));
    EXPECT_FALSE(std::regex_search("bert.encoder.layer.0.output.dense._input_quantizer2", r));
    EXPECT_FALSE(std::regex_search("bert.encoder.layer.0Xoutput.dense._input_quantizer", r));  // '.' escaped
}

// A hand-made sweep: the metric with each row in float, and what each row, added to the float
// set, gives back of the loss. The search takes the rows highest first (ties in sweep order) and
// stops at the first set within the budget.
TEST(AccuracyBudget, SearchTakesTheSweepsHighestRowsUntilTheBudgetHolds) {
    const std::vector<SensitivityRow> sweep = {
        {"layer 0", 80.0}, {"layer 1", 83.5}, {"layer 2", 81.0}, {"layer 3", 83.5}, {"layer 4", 79.0}};
    const std::map<std::string, double> gain = {
        {"layer 0", 0.5}, {"layer 1", 1.5}, {"layer 2", 0.75}, {"layer 3", 1.25}, {"layer 4", 0.25}};
    auto run = [&](double initial_loss, double budget) {
        double loss = initial_loss;
        std::vector<std::string> asked;
        FloatSetSearch s = search_float_set(sweep, initial_loss, budget, [&](const std::string& row) {
            asked.push_back(row);
            return loss -= gain.at(row);
        });
        EXPECT_EQ(asked, s.rows);  // each row evaluated once, as it is added
        return s;
    };
    FloatSetSearch s = run(4.0, 0.5);  // 4 - 1.5 - 1.25 = 1.25, - 0.75 = 0.5: three rows
    EXPECT_EQ(s.rows, (std::vector<std::string>{"layer 1", "layer 3", "layer 2"}));
    EXPECT_DOUBLE_EQ(s.loss, 0.5);
    EXPECT_TRUE(s.held);
    s = run(4.0, 1.25);
    EXPECT_EQ(s.rows, (std::vector<std::string>{"layer 1", "layer 3"}));
    s = run(0.3, 0.5);  // within the budget as calibrated: nothing in float, nothing evaluated
    EXPECT_TRUE(s.rows.empty());
    EXPECT_DOUBLE_EQ(s.loss, 0.3);
    EXPECT_TRUE(s.held);
    s = run(5.0, 0.5);  // every row gives back 4.25 of 5: all in float, and still over
    EXPECT_EQ(s.rows, (std::vector<std::string>{"layer 1", "layer 3", "layer 2", "layer 0", "layer 4"}));
    EXPECT_DOUBLE_EQ(s.loss, 0.75);
    EXPECT_FALSE(s.held);
}

// 2-bit weights (per tensor) and activations by entropy calibration lose far more than a budget
// of 0 points: quantizers go to float, most sensitive first by the sweep on validation's first
// half, until the loss on its second half is gone or none is left; QAT then has none of them.
TEST(AccuracyBudget, LeavesTheMostSensitiveQuantizersInFloatUntilItHolds) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "pipe");
    raw["training"]["max_steps"] = 60;  // a float model that has learned the task
    raw["quantization"] = {{"calibration_examples", 16},
                           {"weight", {{"num_bits", 2}}},
                           {"per_tensor_weights", true},
                           {"input", {{"num_bits", 2}, {"calib_method", "histogram"}}}};
    raw["pipeline"] = {{"onnx", false}, {"sensitivity", "quantizers"}, {"accuracy_budget", 0.0},
                       {"calibration", "entropy"}, {"validation_fraction", 0.25}, {"qat_num_train_epochs", 0.25}};
    const RunConfig config = parse_run_config(raw, "pipe.json", ".");
    const PipelineOutcome outcome = run_pipeline(config);
    ASSERT_TRUE(outcome.finished);
    ASSERT_TRUE(outcome.results.budget);
    const AccuracyBudgetResult& b = *outcome.results.budget;
    const CalibrationResult& calibration = outcome.results.calibration;
    ASSERT_TRUE(calibration.sensitivity);
    EXPECT_EQ(calibration.sensitivity->method, "entropy");  // swept under the ranges QAT starts from
    const double fp32 = 100 * calibration.fp32_validation->scores.at("accuracy");
    const double ptq = 100 * find_method(calibration, "entropy")->validation->scores.at("accuracy");
    EXPECT_EQ(b.method, "entropy");  // the method QAT starts from
    ASSERT_GT(fp32 - ptq, 0.0) << "2-bit quantization should lose accuracy here";
    ASSERT_FALSE(b.left_in_float.empty());
    // The rows in float are the sweep's highest, in its order (ties kept in sweep order).
    std::vector<SensitivityRow> rows = calibration.sensitivity->rows;
    std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.value > y.value; });
    for (size_t i = 0; i < b.left_in_float.size(); ++i) EXPECT_EQ(b.left_in_float[i], rows[i].left_in_float);
    EXPECT_EQ(b.float_quantizers, b.left_in_float);  // by quantizer: one each
    EXPECT_EQ(b.held, b.loss <= 0.0);
    // Checked on validation's second half (8 of its 16), FP32 measured there too.
    ASSERT_TRUE(b.validation && b.validation_fp32);
    EXPECT_EQ(b.validation->counts.at("eval_examples"), 8);
    EXPECT_EQ(b.validation_fp32->counts.at("eval_examples"), 8);
    EXPECT_NEAR(b.loss, 100 * (b.validation_fp32->scores.at("accuracy") - b.validation->scores.at("accuracy")), 1e-9);
    // The sweep ranked on the first half: its baseline is the entropy model there.
    const std::string entropy = find_method(calibration, "entropy")->checkpoint;
    RunConfig swept = checkpoint_run_config(entropy).value();
    swept.model.init = entropy;
    std::unique_ptr<Task> ranking = make_task(swept, {.train = false});
    ranking->select_eval_set(EvalSplit::ValidationRanking);
    const Metrics first_half = ranking->evaluate(config.training.per_device_eval_batch_size);
    EXPECT_EQ(first_half.counts.at("eval_examples"), 8);
    EXPECT_DOUBLE_EQ(calibration.sensitivity->baseline, first_half.scores.at("accuracy"));
    // ... and FP32 there is the float model's.
    nlohmann::json plain = raw;
    plain.erase("quantization");
    plain["model"]["init"] = (dir.path() / "pipe" / "fp32" / "model.h5").string();
    plain["data"]["validation_fraction"] = 0.25;
    std::unique_ptr<Task> fp32_task = make_task(parse_run_config(plain, "fp32.json", "."), {.train = false});
    fp32_task->select_eval_set(EvalSplit::ValidationRanking);
    ASSERT_TRUE(calibration.sensitivity->fp32);
    EXPECT_DOUBLE_EQ(*calibration.sensitivity->fp32,
                     fp32_task->evaluate(config.training.per_device_eval_batch_size).scores.at("accuracy"));
    // QAT started from the budget's checkpoint, without those quantizers or their ranges.
    const NamedTensors qat = load_hdf5_weights((dir.path() / "pipe" / "qat" / "model.h5").string()).tensors;
    size_t ranges = 0;
    for (const NamedTensor& t : qat) {
        ranges += t.name.ends_with("._amax");
        for (const std::string& name : b.float_quantizers) EXPECT_NE(t.name, name + "._amax");
    }
    EXPECT_EQ(ranges, 20 - b.float_quantizers.size());
    EXPECT_TRUE(fs::exists(dir.path() / "pipe" / "calibrate" / "budget.json"));
    // Like each method's, the budget's file holds ranges over the calibration's float weights.
    EXPECT_EQ(fs::path(b.checkpoint), dir.path() / "pipe" / "calibrate" / "budget" / "ranges.h5");
    EXPECT_EQ(fs::path(checkpoint_weights_file(b.checkpoint)), dir.path() / "pipe" / "calibrate" / "model.h5");
    const std::string md = (dir.path() / "pipe" / "results.md").string();
    std::ifstream in(md);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(b.float_quantizers.size() == 1 ? "1 quantizer left in float (" : "quantizers left in float ("),
              std::string::npos);
    EXPECT_NE(text.find("on validation's second half"), std::string::npos);
    // A budget needs the sweep, and is refused without one before anything runs.
    raw["pipeline"]["sensitivity"] = "none";
    expect_error([&] { parse_run_config(raw, "pipe.json", "."); },
                 {"pipe.json", "pipeline.accuracy_budget", "pipeline.sensitivity"});
    raw["pipeline"]["sensitivity"] = "layers";
    raw["pipeline"]["accuracy_budget"] = -1;
    expect_error([&] { parse_run_config(raw, "pipe.json", "."); }, {"pipe.json", "pipeline.accuracy_budget", ">= 0"});
}
