// The result files a run directory holds (calibration.json, onnx/evaluation.json, results.json)
// read back to what was written, byte for byte when written again, and a file with a field
// missing or of the wrong type is refused with the file and the field's dotted key named: a
// resumed pipeline and a sweep's report read these files back. The reference is the format the
// files had before the stages returned types, spelt out here as JSON. The committed result files:
// test_shipped_results.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "json/json_file.h"
#include "report/pipeline_report.h"
#include "report/pipeline_rows.h"
#include "results/calibration_result.h"
#include "results/pipeline_results.h"
#include "stages/accuracy_budget.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

using namespace qdq;
using qdq::testing::expect_error;
using qdq::testing::TempDir;

namespace {

Metrics classification_metrics(double accuracy) {
    return {.task = TaskKind::classification,
            .scores = {{"accuracy", accuracy}, {"eval_loss", 0.25}},
            .counts = {{"eval_examples", 32}}};
}

CalibrationResult two_method_calibration() {
    CalibrationResult r;
    r.checkpoint = "run/fp32/model.h5";
    r.metric = "accuracy";
    r.quantization.calibration_examples = 16;
    r.fp32 = classification_metrics(0.875);
    r.methods = {{"max", classification_metrics(0.8125), "run/calibrate/max/model.h5"},
                 {"entropy", classification_metrics(0.84375), "run/calibrate/entropy/model.h5",
                  classification_metrics(0.75)}};  // chosen on a validation set
    r.fp32_validation = classification_metrics(0.8);
    r.best = "entropy";
    r.cost = {16, 2, 0.5, 0.75, 1.5, 0.125, 1.75};
    // A weight whose range represents it exactly: no noise, an infinite SQNR (null in JSON).
    QuantizerStats weight{.name = "bert.encoder.layer.0.output.dense._weight_quantizer"};
    weight.weight = WeightRangeStats{0.5, 0.0625, 0.0, std::numeric_limits<double>::infinity()};
    QuantizerStats input{.name = "bert.encoder.layer.0.output.dense._input_quantizer"};
    input.histogram = ActivationHistogram{0.25, {3, 0, 1}, 0.7};
    input.methods = {{"max", {0.7, 0.0, 30.5}}, {"entropy", {0.5, 0.001, 33.25}}};
    r.quantizers = {weight, input, {.name = "bert.embeddings._input_quantizer"}};
    r.sensitivity = SensitivitySweep{"entropy", 0.84375, {{"layer 0", 0.875}}};
    return r;
}

OnnxStage onnx_evaluations() {
    OnnxStage onnx;
    onnx.fp32 = {"ONNX Runtime FP32", "run/onnx/model_fp32.onnx", classification_metrics(0.875), 0.5, 1.25, 0};
    onnx.int8 = {"ONNX Runtime INT8 (QAT, onnxruntime-cpu Q/DQ)", "run/onnx/model_int8.onnx",
                 classification_metrics(0.84375), 0.25, 0.75, 2};
    return onnx;
}

PipelineResults pipeline_results() {
    PipelineResults r;
    r.config.model.init = "model.h5";
    r.config.training.seed = 3;
    r.config.training.output_dir = "run";
    r.fp32 = classification_metrics(0.875);
    r.calibration = two_method_calibration();
    r.qat_from = "max";
    r.qat = classification_metrics(0.90625);
    r.qat_validation = classification_metrics(0.6875);
    r.onnx = onnx_evaluations();
    return r;
}

std::string text_of(const std::string& path) {
    std::string text;
    std::getline(std::ifstream(path), text, '\0');
    return text;
}

// calibration.json as calibrate wrote it before it returned a CalibrationResult.
nlohmann::json calibration_as_written_before() {
    const nlohmann::json metrics = {{"accuracy", 0.8125}, {"eval_loss", 0.25}, {"eval_examples", 32}};
    return {{"checkpoint", "run/fp32/model.h5"},
            {"metric", "accuracy"},
            {"quantization", quantization_config_to_json(QuantizationConfig{})},
            {"fp32", metrics},
            {"methods", {{{"method", "max"}, {"metrics", metrics}, {"checkpoint", "run/calibrate/max/model.h5"}}}},
            {"best", "max"},
            {"cost", {{"calibration_examples", 128}, {"batches", 8}, {"plain_pass_seconds", 0.5},
                      {"collect_seconds", 0.75}, {"collect_ratio", 1.5}, {"ranges_seconds_all_methods", 0.125},
                      {"total_ratio", 1.75}}},
            {"quantizers", {{{"name", "w"}, {"kind", "weight"}, {"amax_max", 0.5}, {"amax_min", 0.0625},
                             {"clipped_fraction", 0.0}, {"sqnr_db", 40.5}},
                            {{"name", "x"}, {"kind", "activation"},
                             {"histogram", {{"bin_width", 0.25}, {"counts", {3, 0, 1}}, {"max", 0.7}}},
                             {"methods", {{"max", {{"amax", 0.7}, {"clipped_fraction", 0.0}, {"sqnr_db", 30.5}}}}}}}},
            {"sensitivity", {{"method", "max"}, {"baseline", 0.8125},
                             {"rows", {{{"left_in_float", "layer 0"}, {"value", 0.875}}}}}}};
}

}  // namespace

TEST(CalibrationFile, ReadsBackWhatWasWritten) {
    TempDir dir;
    const CalibrationResult written = two_method_calibration();
    const std::string path = (dir.path() / "calibration.json").string();
    write_json_file(path, calibration_result_to_json(written));
    const CalibrationResult read = calibration_result_from_json(read_json_file(path), "", path);
    EXPECT_EQ(read.checkpoint, written.checkpoint);
    EXPECT_EQ(read.fp32, written.fp32);
    ASSERT_EQ(read.methods.size(), 2u);
    EXPECT_EQ(read.methods[1].name, "entropy");
    EXPECT_EQ(read.methods[1].metrics, written.methods[1].metrics);
    EXPECT_EQ(read.methods[1].checkpoint, written.methods[1].checkpoint);
    EXPECT_EQ(read.methods[1].validation, written.methods[1].validation);
    EXPECT_FALSE(read.methods[0].validation);
    EXPECT_EQ(read.fp32_validation, written.fp32_validation);
    EXPECT_EQ(read.best, "entropy");
    EXPECT_EQ(read.quantization.calibration_examples, 16);
    EXPECT_EQ(read.cost.ranges_seconds_all_methods, 0.125);
    ASSERT_EQ(read.quantizers.size(), 3u);
    ASSERT_TRUE(read.quantizers[0].weight);
    EXPECT_EQ(read.quantizers[0].weight->amax_min, 0.0625);
    EXPECT_TRUE(std::isnan(read.quantizers[0].weight->sqnr_db));  // written as null: JSON has no infinity
    EXPECT_EQ(read.quantizers[1].histogram->counts, (std::vector<int64_t>{3, 0, 1}));
    EXPECT_EQ(read.quantizers[1].methods.at("entropy").sqnr_db, 33.25);
    EXPECT_FALSE(read.quantizers[2].weight || read.quantizers[2].histogram || !read.quantizers[2].methods.empty());
    ASSERT_TRUE(read.sensitivity);
    EXPECT_EQ(read.sensitivity->rows[0].left_in_float, "layer 0");
    // Written again, the file is the same; the counts stay integers.
    const std::string again = (dir.path() / "again.json").string();
    write_json_file(again, calibration_result_to_json(read));
    EXPECT_EQ(text_of(again), text_of(path));
    EXPECT_TRUE(read_json_file(again)["methods"][0]["metrics"]["eval_examples"].is_number_integer());

    CalibrationResult without_sweep = written;
    without_sweep.sensitivity.reset();
    const nlohmann::json j = calibration_result_to_json(without_sweep);
    EXPECT_FALSE(j.contains("sensitivity"));
    EXPECT_FALSE(calibration_result_from_json(j, "", "calibration.json").sensitivity);
}

TEST(CalibrationFile, ReadsTheFormatWrittenBeforeTypes) {
    const nlohmann::json before = calibration_as_written_before();
    const CalibrationResult read = calibration_result_from_json(before, "", "calibration.json");
    EXPECT_EQ(read.methods[0].metrics, classification_metrics(0.8125));
    EXPECT_EQ(read.quantizers[1].methods.at("max").amax, 0.7);
    EXPECT_EQ(calibration_result_to_json(read), before);
}

TEST(CalibrationFile, AMissingOrWronglyTypedKeyNamesTheFileAndTheKey) {
    const std::string file = "run/calibrate/calibration.json";
    auto expect_refused = [&](const nlohmann::json& j, const std::vector<std::string>& parts) {
        expect_error([&] { calibration_result_from_json(j, "", file); }, parts);
    };
    nlohmann::json j = calibration_as_written_before();
    j["cost"].erase("collect_ratio");
    expect_refused(j, {file, "'cost.collect_ratio'", "missing"});
    j = calibration_as_written_before();
    j.erase("best");
    expect_refused(j, {file, "'best'", "missing"});
    j = calibration_as_written_before();
    j["methods"][0]["metrics"]["accuracy"] = "high";
    expect_refused(j, {file, "'methods[0].metrics.accuracy'", "number"});
    j = calibration_as_written_before();
    j["quantizers"][1]["methods"]["max"].erase("sqnr_db");
    expect_refused(j, {file, "'quantizers[1].methods.max.sqnr_db'", "missing"});
    j = calibration_as_written_before();
    j["quantizers"][0]["kind"] = "bias";
    expect_refused(j, {file, "'quantizers[0].kind'", "weight, activation"});
    j = calibration_as_written_before();
    j["quantizers"][1]["histogram"]["counts"] = {1, 2.5};
    expect_refused(j, {file, "'quantizers[1].histogram.counts'", "integers"});
    j = calibration_as_written_before();
    j["methods"] = nlohmann::json::array({"max"});
    expect_refused(j, {file, "'methods[0]'", "object"});
    j = calibration_as_written_before();
    j["sensitivity"]["rows"] = "layer 0";
    expect_refused(j, {file, "'sensitivity.rows'", "list"});
    j = calibration_as_written_before();
    j["cost"]["batchez"] = 8;
    expect_refused(j, {file, "'cost.batchez'", "not a known"});
}

TEST(OnnxEvaluationFile, ReadsBackWhatWasWrittenAndHoldsTwoModels) {
    TempDir dir;
    const std::string path = (dir.path() / "evaluation.json").string();
    write_json_file(path, onnx_stage_to_json(onnx_evaluations()));
    const nlohmann::json j = read_json_file(path);
    ASSERT_TRUE(j.is_array());
    EXPECT_EQ(j[1]["model"], "ONNX Runtime INT8 (QAT, onnxruntime-cpu Q/DQ)");
    EXPECT_EQ(j[1]["threads"], 2);
    const OnnxStage read = onnx_stage_from_json(j, "", path);
    EXPECT_EQ(read.fp32.file, "run/onnx/model_fp32.onnx");
    EXPECT_EQ(read.int8.metrics, classification_metrics(0.84375));
    EXPECT_EQ(read.int8.latency_ms, 0.75);
    EXPECT_EQ(onnx_stage_to_json(read), j);
    // Files written before the exported checkpoint was kept have none; a kept one reads back.
    EXPECT_FALSE(j[1].contains("checkpoint"));
    nlohmann::json with_checkpoint = j;
    with_checkpoint[1]["checkpoint"] = "run/qat_lsq/model.h5";
    EXPECT_EQ(onnx_stage_from_json(with_checkpoint, "", path).int8.checkpoint, "run/qat_lsq/model.h5");
    EXPECT_EQ(onnx_stage_to_json(onnx_stage_from_json(with_checkpoint, "", path)), with_checkpoint);

    // Files written before the outputs were compared have no agreement; one reads back.
    EXPECT_FALSE(j[1].contains("agreement"));
    nlohmann::json with_agreement = j;
    with_agreement[1]["agreement"] = {{{"output", "logits"}, {"rows", 32}, {"same_argmax", 31}, {"largest_difference", 0.25},
                                       {"largest_probability_difference", 0.0625}}};
    const OnnxStage agreed = onnx_stage_from_json(with_agreement, "", path);
    ASSERT_EQ(agreed.int8.agreement.size(), 1u);
    EXPECT_EQ(agreed.int8.agreement[0].argmax_agree, 31);
    EXPECT_EQ(agreed.int8.agreement[0].max_probability_difference, 0.0625);
    EXPECT_EQ(onnx_stage_to_json(agreed), with_agreement);
    with_agreement[1]["agreement"][0]["same_argmx"] = 31;
    expect_error([&] { onnx_stage_from_json(with_agreement, "", path); }, {path, "'[1].agreement[0].same_argmx'"});

    expect_error([&] { onnx_stage_from_json(nlohmann::json::array({j[0]}), "", path); }, {path, "two evaluations"});
    nlohmann::json no_latency = j;
    no_latency[1].erase("latency_ms");
    expect_error([&] { onnx_stage_from_json(no_latency, "", path); }, {path, "'[1].latency_ms'", "missing"});
}

// After an accuracy budget left quantizers in float, a third model: the PTQ one with every
// quantizer in INT8, whose latency the report sets beside the INT8 model's.
TEST(OnnxEvaluationFile, HoldsAThirdModelAfterABudgetAndTheReportGivesTheFloatSetsCost) {
    TempDir dir;
    const std::string path = (dir.path() / "evaluation.json").string();
    OnnxStage onnx = onnx_evaluations();
    onnx.int8_every = OnnxEvaluation{"ONNX Runtime INT8 (PTQ max, every quantizer, onnxruntime-cpu Q/DQ)",
                                     "run/onnx/model_int8_every.onnx", classification_metrics(0.8125), 0.125, 0.5, 2};
    write_json_file(path, onnx_stage_to_json(onnx));
    const nlohmann::json j = read_json_file(path);
    ASSERT_EQ(j.size(), 3u);
    const OnnxStage read = onnx_stage_from_json(j, "", path);
    ASSERT_TRUE(read.int8_every);
    EXPECT_EQ(read.int8_every->file, "run/onnx/model_int8_every.onnx");
    EXPECT_EQ(onnx_stage_to_json(read), j);
    nlohmann::json four = j;
    four.push_back(j[2]);
    expect_error([&] { onnx_stage_from_json(four, "", path); }, {path, "two evaluations", "third"});

    PipelineResults r = pipeline_results();
    r.onnx = read;
    // Three quantizers, two of them left in float.
    r.calibration.quantizers = {{.name = "a._input_quantizer"}, {.name = "b._weight_quantizer"}, {.name = "c"}};
    r.budget = AccuracyBudgetResult{.budget = 0.5, .method = "max", .loss = 0.25, .held = true,
                                    .left_in_float = {"layer 1"},
                                    .float_quantizers = {"a._input_quantizer", "b._weight_quantizer"}};
    const std::vector<PipelineRow> rows = pipeline_rows(r);
    ASSERT_EQ(rows.size(), 8u);  // FP32, two PTQ, PTQ within the budget, QAT, three ONNX models
    EXPECT_EQ(row_label(rows[3]), "PTQ within 0.50 points (from max with 2 in float)");
    EXPECT_EQ(row_label(rows[4]), "QAT (from max)");
    EXPECT_EQ(pipeline_summary(r).at("ptq_budget_float_quantizers"), 2);
    EXPECT_EQ(rows[7].model, "ONNX Runtime INT8 (PTQ max, every quantizer, onnxruntime-cpu Q/DQ)");
    EXPECT_EQ(rows[7].latency_ms, 0.5);
    EXPECT_EQ(pipeline_summary(r).at("onnx_int8_every_latency_ms"), 0.5);
    // 0.75 ms with two quantizers in float against 0.5 ms with none: 0.25 ms, 50%.
    const std::string sentence = budget_sentence(r);
    EXPECT_NE(sentence.find("2 quantizers left in float (layer 1)"), std::string::npos) << sentence;
    EXPECT_NE(sentence.find("costs 0.25 ms (50.0%): 0.75 ms against 0.50 ms"), std::string::npos) << sentence;
    EXPECT_NE(sentence.find("0.25 points below FP32 on test; QAT and the INT8 export leave the same ones out"),
              std::string::npos) << sentence;  // no validation split
    EXPECT_TRUE(qat_takes_float_set(*r.budget, r.calibration));
    // Every quantizer in float is the FP32 model: QAT starts from the fully quantized PTQ model.
    r.calibration.quantizers.pop_back();
    EXPECT_FALSE(qat_takes_float_set(*r.budget, r.calibration));
    EXPECT_NE(budget_sentence(r).find("that is the FP32 model, so QAT starts from the fully quantized PTQ model"),
              std::string::npos) << budget_sentence(r);
    r.calibration.quantizers.push_back({.name = "c"});
    r.onnx->int8_every.reset();
    EXPECT_EQ(budget_sentence(r).find("costs"), std::string::npos);
    // One quantizer, and a float set that ended above FP32 where it was checked: on validation
    // in records from before the halves, on its second half since.
    r.budget->float_quantizers = {"a._input_quantizer"};
    r.budget->loss = -0.5;
    r.budget->validation = Metrics{};
    EXPECT_NE(budget_sentence(r).find("1 quantizer left in float (layer 1), 0.50 points above FP32 on validation;"),
              std::string::npos) << budget_sentence(r);
    r.budget->validation_fp32 = Metrics{};
    EXPECT_NE(budget_sentence(r).find("0.50 points above FP32 on validation's second half (the sweep ranked on its first)"),
              std::string::npos) << budget_sentence(r);
}

TEST(ResultsFile, ReadsBackWhatWasWrittenAndDerivesTheRowsAndSummary) {
    TempDir dir;
    const PipelineResults written = pipeline_results();
    const std::string path = (dir.path() / "results.json").string();
    write_json_file(path, pipeline_results_to_json(written));
    const PipelineResults read = pipeline_results_from_json(read_json_file(path), path);
    EXPECT_EQ(run_config_to_json(read.config), run_config_to_json(written.config));
    EXPECT_EQ(read.qat, written.qat);
    EXPECT_EQ(read.qat_validation, written.qat_validation);
    EXPECT_FALSE(read.fp32_validation);
    EXPECT_EQ(read.qat_from, "max");
    EXPECT_EQ(read.calibration.best, "entropy");
    ASSERT_TRUE(read.onnx);
    EXPECT_EQ(read.onnx->int8.model, written.onnx->int8.model);
    const std::string again = (dir.path() / "again.json").string();
    write_json_file(again, pipeline_results_to_json(read));
    EXPECT_EQ(text_of(again), text_of(path));

    // The summary: each stage's metrics under its prefix, PTQ of the method QAT started from.
    const nlohmann::json summary = read_json_file(path)["summary"];
    EXPECT_EQ(summary, pipeline_summary(read));
    EXPECT_EQ(summary["ptq_accuracy"], 0.8125);
    EXPECT_EQ(summary["qat_accuracy"], 0.90625);
    EXPECT_EQ(summary["onnx_int8_accuracy"], 0.84375);
    EXPECT_EQ(summary["onnx_fp32_latency_ms"], 1.25);
    EXPECT_TRUE(summary["fp32_eval_examples"].is_number_integer());
    EXPECT_EQ(summary.size(), 5u * 3 + 2);

    const std::vector<PipelineRow> rows = pipeline_rows(read);
    ASSERT_EQ(rows.size(), 6u);  // FP32, PTQ max, PTQ entropy, QAT, both ONNX models
    EXPECT_EQ(rows[2].model, "PTQ entropy");
    EXPECT_EQ(row_label(rows[3]), "QAT (from max)");
    EXPECT_EQ(row_label(rows[5]), "ONNX Runtime INT8 (QAT, onnxruntime-cpu Q/DQ) (from QAT)");
    EXPECT_FALSE(rows[3].latency_ms);
    EXPECT_EQ(rows[5].latency_ms, 0.75);
    EXPECT_EQ(rows[5].ms_per_example, 0.25);

    // A QAT variant: its own row and summary entries, and the export's row says which run it is of.
    PipelineResults variant = written;
    variant.qat_variants = {{"lsq", classification_metrics(0.9375), classification_metrics(0.75)}};
    variant.deployed_qat = "QAT lsq";
    const nlohmann::json with_variant = pipeline_results_to_json(variant);
    EXPECT_EQ(pipeline_results_to_json(pipeline_results_from_json(with_variant, path)), with_variant);
    EXPECT_EQ(with_variant["summary"]["qat_lsq_accuracy"], 0.9375);
    const std::vector<PipelineRow> variant_rows = pipeline_rows(pipeline_results_from_json(with_variant, path));
    ASSERT_EQ(variant_rows.size(), 7u);
    EXPECT_EQ(row_label(variant_rows[4]), "QAT lsq (from max)");
    EXPECT_EQ(variant_rows[6].from, "QAT lsq");
    nlohmann::json undeployed = with_variant;
    undeployed.erase("deployed_qat");
    expect_error([&] { pipeline_results_from_json(undeployed, path); }, {path, "deployed_qat"});

    // The precision the rows ran in, from the run's config as results.json keeps it.
    EXPECT_EQ(precision_sentence(read).rfind("Every framework row ran its matrix products in FP32", 0), 0u);
    PipelineResults bf16 = read;
    bf16.config.training.bf16 = true;
    const std::string bf16_sentence = precision_sentence(bf16);
    EXPECT_EQ(bf16_sentence.rfind("Training ran its matrix products in bf16", 0), 0u) << bf16_sentence;
    EXPECT_NE(bf16_sentence.find("every quantized row was scored with FP32 products"), std::string::npos);

    // Without the ONNX stage: no "onnx" key, no ONNX rows or summary entries.
    PipelineResults no_onnx = written;
    no_onnx.onnx.reset();
    const nlohmann::json j = pipeline_results_to_json(no_onnx);
    EXPECT_FALSE(j.contains("onnx"));
    EXPECT_FALSE(j["summary"].contains("onnx_int8_latency_ms"));
    EXPECT_EQ(pipeline_rows(pipeline_results_from_json(j, path)).size(), 4u);

    nlohmann::json broken = read_json_file(path);
    broken["calibration"]["cost"].erase("total_ratio");
    expect_error([&] { pipeline_results_from_json(broken, path); }, {path, "'calibration.cost.total_ratio'", "missing"});
    broken = read_json_file(path);
    broken["onnx"][0]["metrics"]["accuracy"] = true;
    expect_error([&] { pipeline_results_from_json(broken, path); }, {path, "'onnx[0].metrics.accuracy'", "number"});
    broken = read_json_file(path);
    broken.erase("qat");
    expect_error([&] { pipeline_results_from_json(broken, path); }, {path, "'qat'", "missing"});
}
