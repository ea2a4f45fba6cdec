// How closely an exported model computes what the framework's quantized model computes: both run
// on the same evaluation batches, and every fake-quantized tensor is compared with the
// DequantizeLinear that stands for it in the graph, in units of that quantizer's step
// (amax/127). The first quantizer whose codes differ is where the two part; the model outputs
// are compared twice: in the probe (onnx/onnx_probe.h), run without ONNX Runtime's graph
// optimizations, so every node as ONNX defines it, and in the model as exported, with all of them
// (its fusions and integer kernels). The first says what the graph means, the second what
// ONNX Runtime makes of it. The quantized tensors are compared both ways too: as defined (every
// DequantizeLinear) and as deployed (the codes of every QuantizeLinear of a computed tensor, as
// the fused kernels read them). Where the deployed codes first part is where a deployment starts
// to compute another model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stages/onnx_evaluation.h"
#include "trainers/task.h"

namespace qdq {

struct FidelityOptions {
    int64_t examples = 16;   // the first evaluation batches' examples, the longest ones
    int64_t batch_size = 8;
    int threads = 1;         // ONNX Runtime's intra-op threads
};

// How far one quantizer's values lie from ONNX Runtime's, over every compared element.
struct StepAgreement {
    double max_steps = 0;   // the largest |framework − ONNX Runtime|, in quantization steps
    double mean_steps = 0;
    int64_t moved = 0;      // elements half a step or more apart: another code
};

// One quantizer, against the graph as ONNX defines it and, for a computed tensor, against the
// codes the deployed model's kernels consume (onnx/onnx_probe.h).
struct QuantizerFidelity {
    std::string name;       // the framework's ("bert.encoder.layer.0.attention.self.query._input_quantizer")
    int64_t elements = 0;
    StepAgreement as_defined;
    std::optional<StepAgreement> as_deployed;  // none for weights, folded into constants
    // The scales of its QuantizeLinear and DequantizeLinear against the framework's amax/127, in
    // ulps (0: the very floats the export writes); the largest over channels.
    int64_t scale_ulps = 0;
};

struct FidelityReport {
    std::string model;
    int64_t examples = 0;
    std::vector<QuantizerFidelity> quantizers;  // in graph order
    std::vector<OutputFidelity> probe;          // the outputs as defined
    std::vector<OutputFidelity> deployed;       // the outputs as deployed: the exported model's
    // The first quantizer in graph order with a moved code, if any, as defined and as deployed.
    std::optional<size_t> first_parting;
    std::optional<size_t> first_parting_deployed;
    // Quantizers that quantize in the framework with no DequantizeLinear in the graph (for
    // onnxruntime-cpu, a weight whose input is float is folded into its initializer, legitimately).
    std::vector<std::string> missing;
};

// `task`'s model holds the quantized weights and ranges that `model_path` was exported from.
// Writes the two probes beside the model (removed afterwards). A quantizer without a DequantizeLinear
// is listed in `missing`; throws when a DequantizeLinear stands for no quantizer of the model or
// the shapes cannot be matched.
FidelityReport check_onnx_fidelity(Task& task, const std::string& model_path, const FidelityOptions& options);

// The report as Markdown: the outputs, then a row per quantizer with where the two first part.
std::string fidelity_markdown(const FidelityReport& report);
nlohmann::json fidelity_summary(const FidelityReport& report);

}  // namespace qdq
