#include "stages/onnx_fidelity.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>

#include "cuda/quant_math.h"
#include "nn/bert_quantizers.h"
#include "onnx/onnx_export.h"
#include "onnx/onnx_probe.h"
#include "onnx/onnx_runtime.h"
#include "quant/tensor_quantizer.h"
#include "report/number_text.h"

namespace qdq {

namespace {

constexpr float kInt8Bound = 127.0f;  // the export's only width (stages/export.h)
const std::string kDequantize = ".dequantize";

// Sums over every compared element of one quantizer, turned into a QuantizerFidelity at the end.
struct StepSums {
    int64_t elements = 0, moved = 0;
    double max_steps = 0, sum_steps = 0;
};

// Whether the graph holds the quantizer's tensor with its last two dimensions swapped: a Linear's
// weight, stored [in, out] for MatMul, and the key of Q·Kᵀ, quantized after its transpose.
bool transposed_in_graph(const std::string& name, const TensorQuantizer& q) {
    static const std::string key = std::string(nn::quantizer_sites::kMatmulK) + kDequantize;
    return q.role == QuantRole::Weight || name.ends_with(key);
}

// `ours` (the framework's fake-quantized tensor) against `theirs` (the DequantizeLinear's output),
// `transposed` as above. A weight's steps are per row of `ours` when per channel.
void compare_quantized(StepSums& sums, const std::string& name, const Tensor& ours, const Tensor& theirs,
                       bool transposed, const std::vector<float>& steps) {
    const Shape& a = ours.shape();
    const Shape& b = theirs.shape();
    const size_t rank = a.size();
    Shape swapped = a;
    if (rank >= 2) std::swap(swapped[rank - 1], swapped[rank - 2]);
    if (b != (transposed ? swapped : a))
        throw std::runtime_error(name + ": the framework's " + shape_str(a) + " and the graph's " + shape_str(b) +
                                 " do not match");
    const int64_t cols = rank >= 1 ? a[rank - 1] : 1, rows = rank >= 2 ? a[rank - 2] : 1;
    if (steps.size() > 1 && (rank != 2 || (int64_t)steps.size() != rows))
        throw std::runtime_error(name + ": per-channel ranges are compared on 2-D weights only");
    const std::vector<float> x = ours.to_vector(), y = theirs.to_vector();
    for (int64_t i = 0; i < (int64_t)x.size(); ++i) {
        const int64_t row = (i / cols) % rows, col = i % cols, matrix = i / (rows * cols);
        const int64_t j = transposed ? matrix * rows * cols + col * rows + row : i;
        const double step = steps[steps.size() == 1 ? 0 : (size_t)row];
        const double d = std::fabs((double)x[(size_t)i] - (double)y[(size_t)j]) / step;
        sums.max_steps = std::max(sums.max_steps, d);
        sums.sum_steps += d;
        sums.moved += d >= 0.5;
    }
    sums.elements += (int64_t)x.size();
}

// amax/127 per channel (one value per tensor); a vanishing amax zeroes its channel, where any
// difference at all is a wrong code, so its step counts as 1.
std::vector<float> steps_of(const TensorQuantizer& q) {
    std::vector<float> steps = q.amax.to_vector();
    for (float& s : steps) s = s <= kTinyAmax ? 1.0f : s / kInt8Bound;
    return steps;
}

// How many floats lie between a and b (0: the same float; both positive here).
int64_t ulps_apart(float a, float b) {
    return std::llabs((int64_t)std::bit_cast<int32_t>(a) - (int64_t)std::bit_cast<int32_t>(b));
}

// QuantizerFidelity::scale_ulps for `q` and its DequantizeLinear `v`, whose scales the export
// writes as amax/127 per channel (1 where amax vanishes, onnx/onnx_export.cpp).
int64_t scale_ulps(const TensorQuantizer& q, const DequantizedValue& v, const std::string& name) {
    const std::vector<float> amax = q.amax.to_vector();
    for (const auto* values : {&v.scale, &v.quantize_scale})
        if (!values->empty() && values->size() != amax.size())
            throw std::runtime_error(name + ": the graph has " + std::to_string(values->size()) + " scales for " +
                                     std::to_string(amax.size()) + " ranges");
    int64_t worst = 0;
    for (size_t c = 0; c < amax.size(); ++c) {
        const float step = amax[c] <= kTinyAmax ? 1.0f : amax[c] / kInt8Bound;
        worst = std::max(worst, ulps_apart(v.scale[c], step));
        if (!v.quantize_scale.empty()) worst = std::max(worst, ulps_apart(v.quantize_scale[c], step));
    }
    return worst;
}

}  // namespace

namespace {

StepAgreement agreement_of(const StepSums& s) {
    return {.max_steps = s.max_steps, .mean_steps = s.elements ? s.sum_steps / (double)s.elements : 0.0, .moved = s.moved};
}

// A probe written beside the model for as long as the check runs.
struct ProbeFile {
    std::string path;
    std::vector<DequantizedValue> values;
    ProbeFile(const std::string& model_path, ProbeKind kind)
        : path(model_path + (kind == ProbeKind::AsDefined ? ".defined" : ".deployed") + ".probe.onnx"),
          values(write_probe(model_path, path, kind)) {}
    ~ProbeFile() { std::filesystem::remove(path); }
    ProbeFile(const ProbeFile&) = delete;
    ProbeFile& operator=(const ProbeFile&) = delete;
};

// Each probe returns every quantized tensor, about 5 MB an example at BERT-mini's shape and ten
// times that at BERT-base's: ONNX Runtime runs this many examples at a time, so that a check of
// a whole evaluation set holds one group's tensors, not all of them.
constexpr int64_t kExamplesPerRun = 32;

// The model's own outputs of a probe's run (what compare_outputs reads), without the probed tensors.
std::map<std::string, Tensor> model_outputs(const std::map<std::string, Tensor>& run, const NamedOutputs& framework) {
    std::map<std::string, Tensor> kept;
    for (const auto& [name, tensor] : framework) {
        auto it = run.find(name);
        if (it != run.end()) kept.insert(*it);
    }
    return kept;
}

}  // namespace

FidelityReport check_onnx_fidelity(Task& task, const std::string& model_path, const FidelityOptions& options) {
    std::vector<nn::BertInputs> batches = task.eval_inputs(options.batch_size);
    const size_t count = (size_t)std::max<int64_t>(1, (options.examples + options.batch_size - 1) / options.batch_size);
    batches.resize(std::min(batches.size(), count));

    OnnxRuntimeOptions deployed_runtime;
    deployed_runtime.threads = options.threads;
    OnnxRuntimeOptions defined_runtime = deployed_runtime;
    defined_runtime.optimization = "disabled";
    const ProbeFile defined(model_path, ProbeKind::AsDefined), deployed(model_path, ProbeKind::AsDeployed);
    std::map<std::string, std::string> deployed_output;
    for (const DequantizedValue& v : deployed.values) deployed_output[v.output] = v.probe_output;

    // The framework's quantizers in graph order, by their DequantizeLinear's output.
    std::map<std::string, TensorQuantizer*> by_output;
    for (const auto& [name, q] : task.model().named_quantizers())
        if (q->mode == QuantMode::Quantizing) by_output[onnx_quantizer_name(name) + kDequantize] = q;
    std::vector<std::pair<std::string, TensorQuantizer*>> ordered;
    FidelityReport report;
    report.model = model_path;
    for (const DequantizedValue& v : defined.values) {
        auto it = by_output.find(v.output);
        if (it == by_output.end())
            throw std::runtime_error(model_path + ": '" + v.output + "' stands for no quantizer of the framework's model");
        ordered.push_back(*it);
        by_output.erase(it);
    }
    for (const auto& [output, q] : by_output) report.missing.push_back(output.substr(0, output.size() - kDequantize.size()));

    std::vector<StepSums> defined_sums(ordered.size()), deployed_sums(ordered.size());
    std::vector<NamedOutputs> ours;
    std::vector<std::map<std::string, Tensor>> defined_outputs, deployed_outputs;
    std::vector<std::vector<float>> steps;
    for (auto& [output, q] : ordered) {
        q->keep_output = true;
        steps.push_back(steps_of(*q));
    }
    const size_t batches_per_run = (size_t)std::max<int64_t>(1, kExamplesPerRun / options.batch_size);
    for (size_t first = 0; first < batches.size(); first += batches_per_run) {
        const std::vector<nn::BertInputs> group(batches.begin() + (std::ptrdiff_t)first,
                                                batches.begin() + (std::ptrdiff_t)std::min(batches.size(), first + batches_per_run));
        const OnnxRuntimeResult as_defined = run_onnxruntime(defined.path, group, defined_runtime);
        const OnnxRuntimeResult as_deployed = run_onnxruntime(deployed.path, group, deployed_runtime);
        for (size_t b = 0; b < group.size(); ++b) {
            ours.push_back(task.eval_outputs({group[b]})[0]);
            for (size_t i = 0; i < ordered.size(); ++i) {
                const auto& [output, q] = ordered[i];
                const bool transposed = transposed_in_graph(output, *q);
                compare_quantized(defined_sums[i], output, q->kept, as_defined.outputs[b].at(output), transposed, steps[i]);
                auto in_deployed = deployed_output.find(output);
                if (in_deployed != deployed_output.end())
                    compare_quantized(deployed_sums[i], output, q->kept, as_deployed.outputs[b].at(in_deployed->second),
                                      transposed, steps[i]);
            }
            defined_outputs.push_back(model_outputs(as_defined.outputs[b], ours.back()));
            deployed_outputs.push_back(model_outputs(as_deployed.outputs[b], ours.back()));
            report.examples += group[b].input_ids.shape()[0];
        }
    }
    for (auto& [output, q] : ordered) {
        q->keep_output = false;
        q->kept = Tensor();
    }
    for (size_t i = 0; i < ordered.size(); ++i) {
        const std::string& output = ordered[i].first;
        QuantizerFidelity q{.name = output.substr(0, output.size() - kDequantize.size()),
                            .elements = defined_sums[i].elements,
                            .as_defined = agreement_of(defined_sums[i]),
                            .as_deployed = std::nullopt,
                            .scale_ulps = scale_ulps(*ordered[i].second, defined.values[i], output)};
        if (deployed_output.count(output)) q.as_deployed = agreement_of(deployed_sums[i]);
        if (!report.first_parting && q.as_defined.moved > 0) report.first_parting = i;
        if (!report.first_parting_deployed && q.as_deployed && q.as_deployed->moved > 0) report.first_parting_deployed = i;
        report.quantizers.push_back(std::move(q));
    }
    report.probe = compare_outputs(ours, defined_outputs);
    report.deployed = compare_outputs(ours, deployed_outputs);
    return report;
}

namespace {

std::string parting_text(const FidelityReport& r, const std::optional<size_t>& first) {
    return first ? "`" + r.quantizers[*first].name + "`" : std::string("none, every code agrees");
}

}  // namespace

std::string fidelity_markdown(const FidelityReport& r) {
    std::ostringstream md;
    md << "# " << r.model << " against the framework's model\n\n"
       << r.examples << " evaluation examples, the longest. Steps are each quantizer's amax/127; a code moved is an "
          "element half a step or more apart. As defined: every DequantizeLinear, the graph run without "
          "optimizations. As deployed: the codes ONNX Runtime's fused kernels read (weights are constants there).\n\n"
       << "| model | output | rows | same argmax | largest difference | of the probabilities |\n"
       << "|---|---|---:|---:|---:|---:|\n";
    for (const auto& [label, outputs] : {std::pair{"as defined (Q/DQ as ONNX defines them)", &r.probe},
                                         std::pair{"as deployed (ONNX Runtime's kernels)", &r.deployed}})
        for (const OutputFidelity& o : *outputs)
            md << "| " << label << " | " << o.name << " | " << o.rows << " | " << o.argmax_agree << " | "
               << general(o.max_difference) << " | " << general(o.max_probability_difference) << " |\n";
    md << "\nFirst parting as defined: " << parting_text(r, r.first_parting)
       << ". As deployed: " << parting_text(r, r.first_parting_deployed) << ".\n\n";
    if (!r.missing.empty()) {
        md << "Quantizing in the framework, not in the graph:";
        for (const std::string& name : r.missing) md << " `" << name << "`";
        md << "\n\n";
    }
    md << "| quantizer (graph order) | scales off by (ulps) | elements | as defined: largest (steps) | mean (steps) | "
          "codes moved | as deployed: largest (steps) | codes moved |\n"
       << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const QuantizerFidelity& q : r.quantizers) {
        md << "| " << q.name << " | " << q.scale_ulps << " | " << q.elements << " | " << general(q.as_defined.max_steps)
           << " | " << general(q.as_defined.mean_steps) << " | " << q.as_defined.moved << " | ";
        if (q.as_deployed) md << general(q.as_deployed->max_steps) << " | " << q.as_deployed->moved << " |\n";
        else md << " |  |\n";
    }
    return md.str();
}

nlohmann::json fidelity_summary(const FidelityReport& r) {
    double largest = 0, largest_deployed = 0;
    int64_t scale_ulps = 0;
    for (const QuantizerFidelity& q : r.quantizers) {
        largest = std::max(largest, q.as_defined.max_steps);
        if (q.as_deployed) largest_deployed = std::max(largest_deployed, q.as_deployed->max_steps);
        scale_ulps = std::max(scale_ulps, q.scale_ulps);
    }
    auto name_at = [&](const std::optional<size_t>& i) { return i ? nlohmann::json(r.quantizers[*i].name) : nlohmann::json(); };
    nlohmann::json outputs = nlohmann::json::object();
    for (const OutputFidelity& o : r.deployed)
        outputs[o.name] = {{"rows", o.rows}, {"same_argmax", o.argmax_agree}, {"largest_difference", o.max_difference},
                           {"largest_probability_difference", o.max_probability_difference}};
    return {{"examples", r.examples},
            {"quantizers", r.quantizers.size()},
            {"largest_steps", largest},
            {"largest_steps_deployed", largest_deployed},
            {"scale_ulps", scale_ulps},
            {"missing", r.missing},
            {"first_parting", name_at(r.first_parting)},
            {"first_parting_deployed", name_at(r.first_parting_deployed)},
            {"deployed", outputs}};
}

}  // namespace qdq
