// The pipeline on the tiny task: every stage's output where pipeline.h says, the QAT stage
// derived from the FP32 config as documented, the table's rows, the exported models scored in
// ONNX Runtime as the framework scores them, and a rerun that redoes nothing. And Task's split
// of evaluate() into eval_inputs() and score(), which the ONNX Runtime rows rest on. The
// accuracy budget's stage: test_accuracy_budget.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "io/hdf5_weights.h"
#include "json/json_file.h"
#include "nn/heads.h"
#include "onnx/onnx_runtime.h"
#include "report/pipeline_rows.h"
#include "results/pipeline_results.h"
#include "stages/pipeline.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/task.h"
#include "trainers/trainer.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

TEST(Pipeline, ScoreOfTheModelsOutputsIsEvaluate) {
    TempDir dir;
    write_task_files(dir);
    std::unique_ptr<Task> task = make_task(parse_run_config(tiny_config(dir, "t"), "t.json", "."), {false, true});
    const std::vector<nn::BertInputs> inputs = task->eval_inputs(5);
    ASSERT_EQ(inputs.size(), 7u);  // 32 examples in batches of 5
    std::vector<NamedOutputs> outputs = run_eval_model(task->model(), inputs, [&](const nn::BertInputs& in) {
        return NamedOutputs{{"logits", dynamic_cast<nn::BertForSequenceClassification&>(task->model()).forward(in)}};
    });
    EXPECT_EQ(task->score(outputs, 5), task->evaluate(5));
    // Outputs that do not fit the batches are refused, not scored.
    EXPECT_THROW(task->score(outputs, 4), std::invalid_argument);
    std::vector<NamedOutputs> renamed = outputs;
    renamed[2] = {{"start_logits", outputs[2].at("logits")}};
    EXPECT_THROW(task->score(renamed, 5), std::invalid_argument);
    outputs.pop_back();
    EXPECT_THROW(task->score(outputs, 5), std::invalid_argument);
}

// A pipeline's distillation section is for its QAT stage: the FP32 run has no teacher yet to
// learn from, and calibration trains nothing.
TEST(Pipeline, OnlyTheQatStageDistils) {
    TempDir dir;
    write_task_files(dir);
    std::ofstream(dir.path() / "teacher.h5") << "a teacher";
    nlohmann::json raw = tiny_config(dir, "pipe");
    raw["quantization"] = {{"calibration_examples", 16}};
    raw["distillation"] = {{"teacher", (dir.path() / "teacher.h5").string()}, {"alpha", 0.25}};
    const RunConfig config = parse_run_config(raw, "pipe.json", ".");
    EXPECT_FALSE(fp32_stage_config(config).distillation);
    EXPECT_FALSE(calibrate_stage_config(config).distillation);
    const RunConfig qat = qat_stage_config(config, "x.h5");
    ASSERT_TRUE(qat.distillation);
    EXPECT_EQ(qat.distillation->alpha, 0.25);
    EXPECT_EQ(fs::path(qat.distillation->teacher), dir.path() / "teacher.h5");
    // Without a teacher the QAT stage learns from the FP32 stage's model; a plain run refuses.
    raw["distillation"].erase("teacher");
    const RunConfig own = parse_run_config(raw, "pipe.json", ".");
    EXPECT_EQ(fs::path(qat_stage_config(own, "x.h5").distillation->teacher),
              fs::absolute(fs::path(fp32_stage_config(own).training.output_dir) / "model.h5"));
    expect_error([&] { make_task(own, {true, true}); }, {"pipe.json", "distillation.teacher", "not set"});
}

namespace {

// The names in `dir` (folders with a trailing slash), sorted.
std::vector<std::string> names_in(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir))
        names.push_back(entry.path().filename().string() + (entry.is_directory() ? "/" : ""));
    std::sort(names.begin(), names.end());
    return names;
}

// Each stage's folder holds what stages/pipeline.h and the README say, and nothing more: a
// training stage its log, config, model and metrics, its checkpoints gone (save_total_limit
// unset); the calibration the float model once and each method's ranges beside it.
void expect_stage_folders_as_documented(const fs::path& out) {
    const std::vector<std::string> trained = {"config.json", "eval_results.json", "metrics.jsonl", "model.h5",
                                              "test_results.json"};
    for (const char* stage : {"fp32", "qat", "qat_kd"}) EXPECT_EQ(names_in(out / stage), trained) << stage;
    const std::vector<std::string> methods = {"entropy/", "max/", "mse/", "percentile-99.9/", "percentile-99.99/",
                                              "percentile-99.999/"};
    std::vector<std::string> calibrate = {"calibration.json", "calibration_report.md", "model.h5", "plots/"};
    calibrate.insert(calibrate.end(), methods.begin(), methods.end());
    std::sort(calibrate.begin(), calibrate.end());
    EXPECT_EQ(names_in(out / "calibrate"), calibrate);
    for (const std::string& method : methods)
        EXPECT_EQ(names_in(out / "calibrate" / method), std::vector<std::string>{"ranges.h5"}) << method;
}

// Choices made on validation, numbers on test; QAT and its variant started from the chosen
// calibration, the variant learning from the FP32 model.
void expect_choices_on_validation(const PipelineResults& first, const fs::path& out) {
    EXPECT_EQ(first.qat_from, "percentile-99.99");
    // Choices on validation (pipeline.validation_fraction 0.1 of 64 examples: 6), numbers on test.
    ASSERT_TRUE(first.fp32_validation && first.qat_validation);
    EXPECT_EQ(first.fp32_validation->counts.at("eval_examples"), 6);
    EXPECT_EQ(first.qat_validation->counts.at("eval_examples"), 6);
    EXPECT_EQ(first.fp32.counts.at("eval_examples"), 32);
    EXPECT_EQ(first.qat.counts.at("eval_examples"), 32);
    const CalibrationResult& calibration = first.calibration;
    ASSERT_TRUE(calibration.fp32_validation);
    EXPECT_EQ(calibration.fp32, first.fp32);  // the same float model on the same test set
    const CalibratedMethod* chosen = nullptr;
    for (const CalibratedMethod& m : calibration.methods) {
        ASSERT_TRUE(m.validation) << m.name;
        EXPECT_EQ(m.metrics.counts.at("eval_examples"), 32) << m.name;
        if (!chosen || m.validation->scores.at("accuracy") > chosen->validation->scores.at("accuracy")) chosen = &m;
    }
    EXPECT_EQ(calibration.best, chosen->name);
    // QAT started from the calibrated checkpoint: its config names it.
    EXPECT_EQ(read_json_file((out / "qat" / "config.json").string())["model"]["init"],
              (out / "calibrate" / "percentile-99.99" / "ranges.h5").string());
    // The variant started from the same calibration as QAT and learned from the FP32 model.
    const nlohmann::json kd_config = read_json_file((out / "qat_kd" / "config.json").string());
    EXPECT_EQ(kd_config["model"]["init"], (out / "calibrate" / "percentile-99.99" / "ranges.h5").string());
    EXPECT_EQ(kd_config["distillation"]["alpha"], 0.5);
    EXPECT_EQ(fs::path(kd_config["distillation"]["teacher"].get<std::string>()),
              fs::absolute(out / "fp32" / "model.h5"));
    ASSERT_EQ(first.qat_variants.size(), 1u);
    const QatVariantResult& kd = first.qat_variants[0];
    EXPECT_EQ(kd.name, "kd");
    ASSERT_TRUE(kd.validation);
    EXPECT_EQ(kd.test.counts.at("eval_examples"), 32);
    // The export is of the better QAT run on validation, the plain one on a tie.
    const bool kd_better = kd.validation->scores.at("accuracy") > first.qat_validation->scores.at("accuracy");
    EXPECT_EQ(first.deployed_qat, kd_better ? "QAT kd" : "QAT");
}

// The table's rows, ONNX Runtime's scores of the exported models against the framework's, and
// results.json read back.
void expect_rows_and_their_scores(const PipelineResults& first, const fs::path& out) {
    const QatVariantResult& kd = first.qat_variants.at(0);
    const Metrics& deployed = first.deployed_qat == "QAT kd" ? kd.test : first.qat;
    const std::vector<PipelineRow> rows = pipeline_rows(first);
    ASSERT_EQ(rows.size(), 11u);  // FP32, six PTQ methods, QAT and its variant, the two ONNX models
    EXPECT_EQ(row_label(rows[0]), "FP32");
    EXPECT_EQ(row_label(rows[7]), "QAT (from percentile-99.99)");
    EXPECT_EQ(row_label(rows[8]), "QAT kd (from percentile-99.99)");
    EXPECT_EQ(rows[8].metrics, kd.test);
    EXPECT_EQ(row_label(rows[9]), "ONNX Runtime FP32");
    EXPECT_EQ(row_label(rows[10]), "ONNX Runtime INT8, onnxruntime-cpu Q/DQ (from " + first.deployed_qat + ")");
    // The float export computes what the framework does to float rounding; the Q/DQ one may move
    // an example whose logits are close, one quantum apart in a range (test_onnx_tasks.cpp).
    const std::map<std::string, double>& fp32 = first.fp32.scores;
    const std::map<std::string, double>& qat_metrics = deployed.scores;
    const std::map<std::string, double>& onnx_fp32 = rows[9].metrics.scores;
    const std::map<std::string, double>& onnx_int8 = rows[10].metrics.scores;
    EXPECT_DOUBLE_EQ(onnx_fp32.at("accuracy"), fp32.at("accuracy"));
    EXPECT_NEAR(onnx_fp32.at("eval_loss"), fp32.at("eval_loss"), 1e-5);
    EXPECT_NEAR(onnx_int8.at("accuracy"), qat_metrics.at("accuracy"), 1.0 / 32 + 1e-9);
    EXPECT_NEAR(onnx_int8.at("eval_loss"), qat_metrics.at("eval_loss"), 0.05);
    for (size_t r : {9u, 10u}) {
        ASSERT_TRUE(rows[r].latency_ms && rows[r].ms_per_example);
        EXPECT_GT(*rows[r].latency_ms, 0.0);
        EXPECT_GT(*rows[r].ms_per_example, 0.0);
    }
    const nlohmann::json summary = pipeline_summary(first);
    for (const char* key : {"fp32_accuracy", "ptq_accuracy", "qat_accuracy", "qat_kd_accuracy", "onnx_fp32_accuracy",
                            "onnx_int8_accuracy", "onnx_int8_latency_ms"})
        EXPECT_TRUE(summary.contains(key)) << key;
    // results.json reads back to what the run returned (dumped: JSON writes infinity as null).
    const std::string results_json = (out / "results.json").string();
    EXPECT_EQ(pipeline_results_to_json(pipeline_results_from_json(read_json_file(results_json), results_json)).dump(),
              pipeline_results_to_json(first).dump());
}

// A rerun redoes nothing; the ONNX stage records the QAT checkpoint it exported, and is redone
// when the run to deploy is another one (a variant added to a finished pipeline, say).
void expect_rerun_redoes_nothing(const RunConfig& config, const PipelineResults& first, const fs::path& out) {
    const auto written = fs::last_write_time(out / "qat" / "model.h5");
    const auto onnx_written = fs::last_write_time(out / "onnx" / "model_int8.onnx");
    PipelineOutcome second = run_pipeline(config);
    EXPECT_EQ(fs::last_write_time(out / "qat" / "model.h5"), written);
    EXPECT_EQ(fs::last_write_time(out / "onnx" / "model_int8.onnx"), onnx_written);
    ASSERT_TRUE(second.finished);
    EXPECT_EQ(pipeline_summary(second.results), pipeline_summary(first));

    const std::string deployed_model =
        (out / (first.deployed_qat == "QAT" ? "qat" : "qat_kd") / "model.h5").string();
    const std::string evaluation = (out / "onnx" / "evaluation.json").string();
    nlohmann::json onnx_file = read_json_file(evaluation);
    EXPECT_EQ(onnx_file[1]["checkpoint"], deployed_model);
    // The INT8 export's outputs against the framework's for its checkpoint: the labels but for
    // rounding ties amplified by the quantizers.
    EXPECT_FALSE(onnx_file[0].contains("agreement"));
    const nlohmann::json& a = onnx_file[1]["agreement"].at(0);
    EXPECT_EQ(a["output"], "logits");
    EXPECT_GT(a["rows"].get<int64_t>(), 0);
    EXPECT_GE(a["same_argmax"].get<int64_t>() * 10, a["rows"].get<int64_t>() * 9);
    EXPECT_LT(a["largest_difference"].get<double>(), 0.5);
    EXPECT_LE(a["largest_probability_difference"].get<double>(), a["largest_difference"].get<double>());
    onnx_file[1]["checkpoint"] = (out / "elsewhere" / "model.h5").string();
    write_json_file(evaluation, onnx_file);
    ASSERT_TRUE(run_pipeline(config).finished);
    EXPECT_NE(fs::last_write_time(out / "onnx" / "model_int8.onnx"), onnx_written);
    EXPECT_EQ(read_json_file(evaluation)[1]["checkpoint"], deployed_model);
}

// A rerun under a changed key is refused at the first stage that key changes, naming it, and the
// results stay those of the config that made them.
void expect_changed_config_refused(const RunConfig& config, const fs::path& out) {
    const nlohmann::json results = read_json_file((out / "results.json").string());
    RunConfig faster = config;
    faster.training.learning_rate *= 2;
    expect_error([&] { run_pipeline(faster); }, {(out / "fp32").string(), "/training/learning_rate", "finished run"});
    RunConfig fewer = config;
    fewer.quantization->calibration_examples = 8;
    expect_error([&] { run_pipeline(fewer); }, {"calibration.json", "/quantization/calibration_examples"});
    EXPECT_EQ(read_json_file((out / "results.json").string()), results);
}

}  // namespace

TEST(Pipeline, RunsEveryStageAndARerunRedoesNothing) {
    const std::string no_runtime = onnxruntime_unavailable();
    if (!no_runtime.empty()) {
        const char* ci = std::getenv("CI");
        if (ci && std::string(ci) == "true") FAIL() << no_runtime << "; CI=true, so this is a failure";
        GTEST_SKIP() << no_runtime;
    }
    TempDir dir;
    write_task_files(dir);
    // The model starts from a saved one and takes its shape from there, as the experiment
    // configs start from the pretrained checkpoint: every stage's checkpoints must carry it on.
    const RunConfig pretrained = parse_run_config(tiny_config(dir, "pretrained"), "pre.json", ".");
    ASSERT_EQ(train(pretrained, *make_task(pretrained, {})).status, TrainStatus::finished);
    nlohmann::json raw = tiny_config(dir, "pipe");
    raw["model"] = {{"init", (dir.path() / "pretrained" / "model.h5").string()}};
    raw["quantization"] = {{"calibration_examples", 16}};
    raw["pipeline"] = {{"calibration", "percentile-99.99"},
                       {"qat_learning_rate_ratio", 0.05},
                       {"qat_variants", {{"kd", {{"distillation.alpha", 0.5}, {"distillation.temperature", 2}}}}}};
    RunConfig config = parse_run_config(raw, "pipe.json", ".");

    RunConfig qat = qat_stage_config(config, "x.h5");
    EXPECT_DOUBLE_EQ(qat.training.learning_rate, 0.05 * config.training.learning_rate);
    EXPECT_EQ(qat.model.init, "x.h5");
    EXPECT_EQ(qat.training.output_dir, (dir.path() / "pipe" / "qat").string());
    EXPECT_FALSE(fp32_stage_config(config).quantization);
    EXPECT_EQ(calibrate_stage_config(config).model.init, (dir.path() / "pipe" / "fp32" / "model.h5").string());

    PipelineOutcome first = run_pipeline(config);
    ASSERT_TRUE(first.finished);
    const fs::path out = dir.path() / "pipe";
    for (const char* file : {"fp32/model.h5", "calibrate/calibration.json", "calibrate/model.h5", "calibrate/percentile-99.99/ranges.h5",
                             "qat/model.h5", "onnx/model_fp32.onnx", "onnx/model_int8.onnx", "onnx/evaluation.json", "results.json",
                             "results.md", "plots/metric_by_stage.svg", "plots/fp32_loss.svg",
                             "fp32/test_results.json", "qat/test_results.json",
                             "plots/fp32_eval.svg", "plots/qat_loss.svg", "qat_kd/model.h5", "qat_kd/test_results.json",
                             "plots/qat_kd_loss.svg"})
        EXPECT_TRUE(fs::exists(out / file)) << file;
    expect_stage_folders_as_documented(out);
    expect_choices_on_validation(first.results, out);
    expect_rows_and_their_scores(first.results, out);
    // What the export cannot write is refused before any training.
    nlohmann::json four_bit = raw;
    four_bit["quantization"]["input"] = {{"num_bits", 4}, {"calib_method", "histogram"}};
    four_bit["training"]["output_dir"] = (dir.path() / "four_bit").string();
    EXPECT_THROW(run_pipeline(parse_run_config(four_bit, "pipe.json", ".")), ConfigError);
    EXPECT_FALSE(fs::exists(dir.path() / "four_bit" / "fp32"));

    expect_rerun_redoes_nothing(config, first.results, out);
    expect_changed_config_refused(config, out);
}

// The run to deploy, from hand-made results: the best on validation (not on test), among the
// ones the export can write, the earlier on a tie; the test set only without a validation split.
TEST(Pipeline, DeploysTheBestExportableQatRunOnValidation) {
    auto accuracy = [](double a) { return Metrics{.task = TaskKind::classification, .scores = {{"accuracy", a}}}; };
    PipelineResults r;
    r.fp32 = accuracy(0.9);
    r.qat = accuracy(0.80);
    r.qat_validation = accuracy(0.70);
    r.qat_variants = {{"distillation", accuracy(0.79), accuracy(0.75)},   // better on validation, worse on test
                      {"lsq", accuracy(0.85), accuracy(0.75)},            // ties distillation: the earlier stays
                      {"w4", accuracy(0.95), accuracy(0.90)}};            // best, but not exportable
    EXPECT_EQ(deployed_qat_run(r, {true, true, true, false}), 1u);
    EXPECT_EQ(deployed_qat_run(r, {true, true, true, true}), 3u);
    EXPECT_EQ(deployed_qat_run(r, {true, false, true, false}), 2u);
    EXPECT_EQ(deployed_qat_run(r, {true, false, false, false}), 0u);
    // Without validation numbers the test set is all there is.
    r.qat_validation.reset();
    for (QatVariantResult& v : r.qat_variants) v.validation.reset();
    EXPECT_EQ(deployed_qat_run(r, {true, true, true, false}), 2u);
}
