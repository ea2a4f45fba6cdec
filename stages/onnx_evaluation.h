// A task's evaluation set run through an exported model in ONNX Runtime and scored by the task's
// own Task::score(): the metric of the model as deployed, and what it costs there. The pipeline
// keeps those it runs in onnx/evaluation.json (results/pipeline_results.h): the FP32 and INT8
// exports, and the accuracy budget's third when it leaves quantizers in float.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/onnx_evaluation_result.h"
#include "trainers/task.h"

namespace qdq {

// The framework's outputs against ONNX Runtime's for the same batches, one entry per output name.
// Throws when the batches differ in number, or ONNX Runtime lacks an output or its shape differs.
std::vector<OutputFidelity> compare_outputs(const std::vector<NamedOutputs>& framework,
                                            const std::vector<std::map<std::string, Tensor>>& onnx_runtime);

struct OnnxEvaluationOptions {
    int64_t batch_size = 32;        // as the framework's evaluation batches
    int threads = 0;                // ONNX Runtime's intra-op threads; 0: its default
    int64_t latency_examples = 32;  // single-example runs timed for latency_ms
};

// `framework`: the framework's outputs for task.eval_inputs(options.batch_size), compared with
// ONNX Runtime's into `agreement`; empty compares nothing.
OnnxEvaluation evaluate_onnx(Task& task, const std::string& model_path, const OnnxEvaluationOptions& options,
                             const std::vector<NamedOutputs>& framework = {});

}  // namespace qdq
