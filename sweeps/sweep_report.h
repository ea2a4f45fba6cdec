// What a sweep leaves for its readers, in its results_dir (sweeps/sweep.h): results.json and
// results.md, every run's swept values and final metrics sorted by the sweep's metric. A sweep of
// pipelines adds, above that, the FP32 / PTQ / QAT / ONNX table of report/pipeline_report.h
// with each cell the mean ± standard deviation over the runs that differ only by training.seed
// (one table per setting of the other swept keys), a bar chart of each, and the training curves
// of every run under plots/.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sweeps/sweep.h"

namespace qdq {

// Every run's swept values and final metrics (a pipeline's results.json summary), sorted by the
// sweep's metric (runs without results last).
nlohmann::json sweep_results(const Sweep& sweep);

// The runs of sweep_results as a Markdown table.
std::string sweep_table(const Sweep& sweep, const nlohmann::json& results);

// Records the runs finished in their own directories (record_run), then writes results.json,
// results.md and plots/ into sweep.results_dir; returns results.md's text.
std::string write_sweep_report(const Sweep& sweep, const nlohmann::json& results);

}  // namespace qdq
