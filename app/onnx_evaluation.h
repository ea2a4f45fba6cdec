// A task's evaluation set run through an exported model in ONNX Runtime and scored by the task's
// own Task::score(): the metric of the model as deployed, and what it costs there.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainers/task.h"

namespace qdq {

struct OnnxEvaluationOptions {
    int64_t batch_size = 32;        // as the framework's evaluation batches
    int threads = 0;                // ONNX Runtime's intra-op threads; 0: its default
    int64_t latency_examples = 32;  // single-example runs timed for latency_ms
};

// {"metrics": score()'s, "ms_per_example": session time of the whole batched pass per example
//  (per window for SQuAD),
//  "latency_ms": the median single-example run over the first latency_examples of the
//  evaluation batches (the longest examples), "threads": as asked}
nlohmann::json evaluate_onnx(Task& task, const std::string& model_path, const OnnxEvaluationOptions& options);

}  // namespace qdq
