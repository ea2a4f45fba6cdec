#include "stages/onnx_evaluation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "onnx/onnx_runtime.h"

namespace qdq {

namespace {

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    return xs.empty() ? 0.0 : xs[xs.size() / 2];
}

// softmax of `width` logits from `first`, in double.
std::vector<double> softmax_of(std::vector<float>::const_iterator first, size_t width) {
    const double top = *std::max_element(first, first + (std::ptrdiff_t)width);
    std::vector<double> p(width);
    double sum = 0;
    for (size_t i = 0; i < width; ++i) sum += p[i] = std::exp((double)first[(std::ptrdiff_t)i] - top);
    for (double& v : p) v /= sum;
    return p;
}

// Rows of `width` (framework `x`, ONNX Runtime `y`) added to `f`.
void add_rows(OutputFidelity& f, const std::string& name, const std::vector<float>& x, const std::vector<float>& y,
              size_t width) {
    f.name = name;
    for (size_t row = 0; row * width < x.size(); ++row) {
        const auto xs = x.begin() + (std::ptrdiff_t)(row * width), ys = y.begin() + (std::ptrdiff_t)(row * width);
        f.argmax_agree += std::max_element(xs, xs + (std::ptrdiff_t)width) - xs ==
                          std::max_element(ys, ys + (std::ptrdiff_t)width) - ys;
        const std::vector<double> p = softmax_of(xs, width), q = softmax_of(ys, width);
        for (size_t i = 0; i < width; ++i) f.max_probability_difference = std::max(f.max_probability_difference, std::fabs(p[i] - q[i]));
        ++f.rows;
    }
    for (size_t i = 0; i < x.size(); ++i) f.max_difference = std::max(f.max_difference, (double)std::fabs(x[i] - y[i]));
}

}  // namespace

std::vector<OutputFidelity> compare_outputs(const std::vector<NamedOutputs>& framework,
                                            const std::vector<std::map<std::string, Tensor>>& onnx_runtime) {
    if (framework.size() != onnx_runtime.size())
        throw std::invalid_argument("compare_outputs: " + std::to_string(framework.size()) + " batches against " +
                                    std::to_string(onnx_runtime.size()));
    std::map<std::string, OutputFidelity> by_name;
    for (size_t b = 0; b < framework.size(); ++b)
        for (const auto& [name, tensor] : framework[b]) {
            auto it = onnx_runtime[b].find(name);
            if (it == onnx_runtime[b].end()) throw std::runtime_error("ONNX Runtime returned no '" + name + "'");
            if (it->second.shape() != tensor.shape())
                throw std::runtime_error(name + ": the framework's " + shape_str(tensor.shape()) + " against ONNX Runtime's " +
                                         shape_str(it->second.shape()));
            add_rows(by_name[name], name, tensor.to_vector(), it->second.to_vector(), (size_t)tensor.shape().back());
        }
    std::vector<OutputFidelity> out;
    for (const auto& [name, f] : by_name) out.push_back(f);
    return out;
}

OnnxEvaluation evaluate_onnx(Task& task, const std::string& model_path, const OnnxEvaluationOptions& options,
                             const std::vector<NamedOutputs>& framework) {
    OnnxRuntimeOptions runtime;
    runtime.threads = options.threads;
    runtime.warmup_runs = 1;
    const OnnxRuntimeResult pass = run_onnxruntime(model_path, task.eval_inputs(options.batch_size), runtime);
    double pass_ms = 0;
    for (double ms : pass.milliseconds) pass_ms += ms;
    const Metrics metrics = task.score(pass.outputs, options.batch_size);

    std::vector<nn::BertInputs> singles = task.eval_inputs(1);
    singles.resize(std::min<size_t>(singles.size(), (size_t)std::max<int64_t>(options.latency_examples, 1)));
    const OnnxRuntimeResult timed = run_onnxruntime(model_path, singles, runtime);

    const double scored = metrics.find("eval_windows").value_or(metrics.find("eval_examples").value_or(0.0));
    return {.metrics = metrics,
            .ms_per_example = scored > 0 ? pass_ms / scored : 0.0,
            .latency_ms = median(timed.milliseconds),
            .threads = options.threads,
            .agreement = framework.empty() ? std::vector<OutputFidelity>{} : compare_outputs(framework, pass.outputs)};
}

}  // namespace qdq
