// The table of a pipeline run (stages/pipeline.h): results.json (results/pipeline_results.h) and
// results.md, one row per model (pipeline_rows) — FP32, PTQ by each calibration method, QAT
// and its variants, and the ONNX Runtime evaluations when there are — in the metrics the task
// shows, in % (trainers/task_metrics.h: accuracy, or SQuAD's exact match and F1), with the
// change from FP32 and, for ONNX, latency. plots/metric_by_stage.svg shows the main metric of
// each row; plots/<stage>_{loss,eval}.svg each training run's curves (fp32, qat, qat_<variant>).
#pragma once

#include <string>
#include <vector>

#include "results/pipeline_results.h"
#include "trainers/run_config.h"

namespace qdq {

void write_pipeline_report(const RunConfig& config, const PipelineResults& results);

// The report's sentence on the accuracy budget: what stayed in float, how far below FP32 that
// left PTQ, and with the ONNX stage what the float set costs in latency. Empty without a budget.
std::string budget_sentence(const PipelineResults& results);
// Which precision the framework's rows ran their matrix products in, from the run's config
// (training.bf16 or FP32), and how the quantized rows were scored, from the record's scoring.
std::string precision_sentence(const PipelineResults& results);
// `names`, then the stage folder of each QAT variant (qat_<variant>).
std::vector<std::string> qat_stage_names(const PipelineResults& results, std::vector<std::string> names);

}  // namespace qdq
