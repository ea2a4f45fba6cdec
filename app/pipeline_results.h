// What a pipeline run (app/pipeline.h) found, stage by stage, as results.json holds it, and what
// is derived from it: the rows of the results table and the flat summary sweeps read. The files
// are written and read only through these pairs: results.json by pipeline_results_to_json /
// pipeline_results_from_json, onnx/evaluation.json by onnx_stage_to_json / onnx_stage_from_json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/accuracy_budget.h"
#include "app/calibration_result.h"
#include "app/onnx_evaluation.h"
#include "app/result_fields.h"

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
    // The run config as run_config_to_json writes it. It is kept as written, not parsed: parsing
    // checks that the data files exist, and a sweep's report reads runs made elsewhere.
    nlohmann::json config{};
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
};

// One row of the results table.
struct PipelineRow {
    std::string model{};  // "FP32", "PTQ max", "QAT", "QAT lsq", "ONNX Runtime FP32", ...
    // What a row was made from: the calibration method of a QAT row, the QAT run of the INT8
    // export; shown as "QAT (from max)". Sweeps gather it over their runs.
    std::string from{};
    Metrics metrics{};
    std::optional<double> latency_ms{}, ms_per_example{};  // the ONNX Runtime rows
};

// FP32, PTQ by each calibration method, PTQ within the accuracy budget when there is one, QAT
// and its variants, then the ONNX Runtime evaluations when there are.
std::vector<PipelineRow> pipeline_rows(const PipelineResults& results);
// The row's name in a table: its model, and what it was made from in parentheses.
std::string row_label(const PipelineRow& row);

// Every stage's metrics in one flat map, for sweeps over pipelines (app/sweep.h): fp32_<metric>,
// ptq_<metric> (of the method QAT started from), qat_<metric>, qat_<variant>_<metric> for each
// variant, and with ONNX onnx_fp32_<metric>, onnx_int8_<metric> (of the deployed QAT run),
// onnx_fp32_latency_ms and onnx_int8_latency_ms.
Metrics pipeline_summary(const PipelineResults& results);

// results.json also holds the summary, derived from the stages and so not read back.
nlohmann::json pipeline_results_to_json(const PipelineResults& results);
PipelineResults pipeline_results_from_json(const nlohmann::json& j, const std::string& source);

nlohmann::json onnx_stage_to_json(const OnnxStage& onnx);
// `path` is the list's dotted location in `source` ("" for onnx/evaluation.json).
OnnxStage onnx_stage_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);

}  // namespace qdq
