// What running an exported model in ONNX Runtime found (stages/onnx_evaluation.h), as the
// pipeline keeps it in onnx/evaluation.json and results.json: the task's metrics of the model as
// deployed, its cost, and its outputs against the framework's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/result_fields.h"

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

nlohmann::json onnx_evaluation_to_json(const OnnxEvaluation& evaluation);
// `path` is the evaluation's dotted location in `source` ("[1]", "onnx[0]").
OnnxEvaluation onnx_evaluation_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);

}  // namespace qdq
