// What a pipeline run (stages/pipeline.h) found, stage by stage, as results.json holds it, and the
// flat summary sweeps read (the table's rows are report/pipeline_rows.h). The files
// are written and read only through these pairs: results.json by pipeline_results_to_json /
// pipeline_results_from_json, onnx/evaluation.json by onnx_stage_to_json / onnx_stage_from_json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/accuracy_budget_result.h"
#include "results/calibration_result.h"
#include "results/onnx_evaluation_result.h"
#include "results/result_fields.h"
#include "results/scoring.h"
#include "trainers/run_config.h"

namespace qdq {

// The models as deployed; in the files, the list [fp32, int8] or [fp32, int8, int8_every].
struct OnnxStage {
    OnnxEvaluation fp32{};
    OnnxEvaluation int8{};  // the QAT model with Q/DQ pairs
    // With an accuracy budget that left quantizers in float: the PTQ model QAT started from with
    // every quantizer in INT8, so that the float set's cost in latency can be read beside int8.
    std::optional<OnnxEvaluation> int8_every{};
};

// A QAT variant's final model (pipeline.qat_variants, trainers/qat_variant.h).
struct QatVariantResult {
    std::string name{};
    Metrics test{};
    std::optional<Metrics> validation{};
};

struct PipelineResults {
    // The run config, read back without its files (run_config_from_json): a sweep's report
    // reads runs made elsewhere.
    RunConfig config{};
    // Each stage's final model on the test set (data.eval_files); with a validation split also
    // on validation, where the best checkpoint and the calibration method were chosen.
    Metrics fp32{};                   // the FP32 run's final evaluation
    std::optional<Metrics> fp32_validation{};
    CalibrationResult calibration{};  // calibrate/calibration.json
    std::optional<AccuracyBudgetResult> budget{};  // with pipeline.accuracy_budget
    std::string qat_from{};           // the calibration method QAT started from
    Metrics qat{};                    // the QAT run's final evaluation
    std::optional<Metrics> qat_validation{};
    std::vector<QatVariantResult> qat_variants{};  // in name order, as the config keeps them
    std::string deployed_qat{"QAT"};  // the QAT run exported to ONNX: "QAT" or "QAT <variant>"
    std::optional<OnnxStage> onnx{};  // with pipeline.onnx
    // How the framework's rows were scored: this build's when written, none in a record written
    // before records kept it. Stages a pipeline resumed from were scored by the build that ran them.
    std::optional<Scoring> scoring{current_scoring()};
};

// Every stage's metrics in one flat JSON object, for sweeps over pipelines (sweeps/sweep.h), as
// each stage's metrics_to_json with its names prefixed: fp32_<metric>, ptq_<metric> (of the
// method QAT started from), qat_<metric>, qat_<variant>_<metric> for each variant, and with
// ONNX onnx_fp32_<metric>, onnx_int8_<metric> (of the deployed QAT run), onnx_fp32_latency_ms
// and onnx_int8_latency_ms. Mixing stages and latencies, it is no task's Metrics: JSON only.
nlohmann::json pipeline_summary(const PipelineResults& results);

// results.json also holds the summary, derived from the stages and so not read back.
nlohmann::json pipeline_results_to_json(const PipelineResults& results);
PipelineResults pipeline_results_from_json(const nlohmann::json& j, const std::string& source);

nlohmann::json onnx_stage_to_json(const OnnxStage& onnx);
// `path` is the list's dotted location in `source` ("" for onnx/evaluation.json).
OnnxStage onnx_stage_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);

}  // namespace qdq
