// The rows of a pipeline's results table (report/pipeline_report.h), which sweeps also gather
// over their runs (sweeps/sweep_report.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "results/pipeline_results.h"

namespace qdq {

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

}  // namespace qdq
