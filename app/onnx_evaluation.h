// A task's evaluation set run through an exported model in ONNX Runtime and scored by the task's
// own Task::score(): the metric of the model as deployed, and what it costs there. The pipeline
// keeps the two it runs in onnx/evaluation.json (app/pipeline_results.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/result_fields.h"
#include "trainers/task.h"

namespace qdq {

// One output ("logits", "start_logits", "end_logits") of the exported model against the
// framework's for the same model and batches, over every row (all axes but the last).
struct OutputFidelity {
    std::string name;
    int64_t rows = 0;
    int64_t argmax_agree = 0;  // rows whose largest entry (the label, the span's start or end) is the same
    double max_difference = 0;
    // Of the rows' softmax (the label probabilities; over a window's tokens for a span's start or end).
    double max_probability_difference = 0;
};

// The framework's outputs against ONNX Runtime's for the same batches, one entry per output name.
// Throws when the batches differ in number, or ONNX Runtime lacks an output or its shape differs.
std::vector<OutputFidelity> compare_outputs(const std::vector<NamedOutputs>& framework,
                                            const std::vector<std::map<std::string, Tensor>>& onnx_runtime);

struct OnnxEvaluationOptions {
    int64_t batch_size = 32;        // as the framework's evaluation batches
    int threads = 0;                // ONNX Runtime's intra-op threads; 0: its default
    int64_t latency_examples = 32;  // single-example runs timed for latency_ms
};

struct OnnxEvaluation {
    std::string model{};  // its row in the pipeline's table ("ONNX Runtime FP32"); set by the caller
    std::string file{};   // the .onnx file; set by the caller
    Metrics metrics{};    // score()'s
    // Session time of the whole batched pass per example (per window for SQuAD).
    double ms_per_example = 0;
    // The median single-example run over the first latency_examples of the evaluation batches
    // (the longest examples).
    double latency_ms = 0;
    int threads = 0;  // as asked
    std::string checkpoint{};  // what was exported (empty in files written before it was kept); set by the caller
    // Its outputs against the framework's for the same checkpoint, per output (empty in files
    // written before they were compared).
    std::vector<OutputFidelity> agreement{};
};

// `framework`: the framework's outputs for task.eval_inputs(options.batch_size), compared with
// ONNX Runtime's into `agreement`; empty compares nothing.
OnnxEvaluation evaluate_onnx(Task& task, const std::string& model_path, const OnnxEvaluationOptions& options,
                             const std::vector<NamedOutputs>& framework = {});

nlohmann::json onnx_evaluation_to_json(const OnnxEvaluation& evaluation);
// `path` is the evaluation's dotted location in `source` ("[1]", "onnx[0]").
OnnxEvaluation onnx_evaluation_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);

}  // namespace qdq
