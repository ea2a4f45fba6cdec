#include "app/onnx_evaluation.h"

#include <algorithm>

#include "onnx/onnx_runtime.h"

namespace qdq {

namespace {

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    return xs.empty() ? 0.0 : xs[xs.size() / 2];
}

}  // namespace

nlohmann::json evaluate_onnx(Task& task, const std::string& model_path, const OnnxEvaluationOptions& options) {
    OnnxRuntimeOptions runtime;
    runtime.threads = options.threads;
    runtime.warmup_runs = 1;
    const OnnxRuntimeResult pass = run_onnxruntime(model_path, task.eval_inputs(options.batch_size), runtime);
    double pass_ms = 0;
    for (double ms : pass.milliseconds) pass_ms += ms;
    nlohmann::json metrics = task.score(pass.outputs, options.batch_size);

    std::vector<nn::BertInputs> singles = task.eval_inputs(1);
    singles.resize(std::min<size_t>(singles.size(), (size_t)std::max<int64_t>(options.latency_examples, 1)));
    const OnnxRuntimeResult timed = run_onnxruntime(model_path, singles, runtime);

    const int64_t examples = metrics.value("eval_windows", metrics.value("eval_examples", (int64_t)0));
    return {{"metrics", metrics},
            {"ms_per_example", examples > 0 ? pass_ms / (double)examples : 0.0},
            {"latency_ms", median(timed.milliseconds)},
            {"threads", options.threads}};
}

}  // namespace qdq
