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

OnnxEvaluation evaluate_onnx(Task& task, const std::string& model_path, const OnnxEvaluationOptions& options) {
    OnnxRuntimeOptions runtime;
    runtime.threads = options.threads;
    runtime.warmup_runs = 1;
    const OnnxRuntimeResult pass = run_onnxruntime(model_path, task.eval_inputs(options.batch_size), runtime);
    double pass_ms = 0;
    for (double ms : pass.milliseconds) pass_ms += ms;
    const Metrics metrics = task_metrics(task.score(pass.outputs, options.batch_size));

    std::vector<nn::BertInputs> singles = task.eval_inputs(1);
    singles.resize(std::min<size_t>(singles.size(), (size_t)std::max<int64_t>(options.latency_examples, 1)));
    const OnnxRuntimeResult timed = run_onnxruntime(model_path, singles, runtime);

    const auto windows = metrics.values.find("eval_windows"), examples = metrics.values.find("eval_examples");
    const double scored = windows != metrics.values.end() ? windows->second
                          : examples != metrics.values.end() ? examples->second : 0.0;
    return {.metrics = metrics,
            .ms_per_example = scored > 0 ? pass_ms / scored : 0.0,
            .latency_ms = median(timed.milliseconds),
            .threads = options.threads};
}

nlohmann::json onnx_evaluation_to_json(const OnnxEvaluation& e) {
    nlohmann::json j = {{"model", e.model},
                        {"file", e.file},
                        {"metrics", metrics_to_json(e.metrics)},
                        {"ms_per_example", e.ms_per_example},
                        {"latency_ms", e.latency_ms},
                        {"threads", e.threads}};
    if (!e.checkpoint.empty()) j["checkpoint"] = e.checkpoint;
    return j;
}

OnnxEvaluation onnx_evaluation_from_json(const nlohmann::json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    OnnxEvaluation e;
    read_required(f, "model", e.model);
    read_required(f, "file", e.file);
    e.metrics = metrics_from_json(required_section(f, "metrics"), f.path_of("metrics"), source);
    read_real(f, j, "ms_per_example", e.ms_per_example);
    read_real(f, j, "latency_ms", e.latency_ms);
    read_required(f, "threads", e.threads);
    f.read("checkpoint", e.checkpoint);
    f.finish();
    return e;
}

}  // namespace qdq
