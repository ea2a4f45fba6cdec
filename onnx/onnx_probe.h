// Copies of an exported model that also return what it quantizes, so that the framework's
// fake-quantized tensors can be compared with ONNX Runtime's one by one (stages/onnx_fidelity.h).
// Two kinds, for the two questions a deployment asks:
// - As defined: every DequantizeLinear's output, run without graph optimizations, so each node
//   computes what ONNX defines (ONNX Runtime 1.30 also fails to start a session that
//   constant-folds a weight's QuantizeLinear whose DequantizeLinear is a graph output).
// - As deployed: the codes of every QuantizeLinear of a computed tensor, dequantized on a branch
//   of their own (Cast, Sub zero point, Mul scale) that no fusion takes, run with every
//   optimization. Those codes are what ONNX Runtime's fused integer kernels consume, and the
//   branch leaves the kernels as they are: tests/test_onnx_fidelity_report.cpp checks that the
//   probe's outputs are the exported model's bit for bit. A weight's QuantizeLinear is folded
//   into a constant, so weights are compared as defined only.
#pragma once

#include <string>
#include <vector>

namespace qdq {

enum class ProbeKind { AsDefined, AsDeployed };

// One quantizer of the graph: its DequantizeLinear and the constants that set its codes and values.
struct DequantizedValue {
    std::string output{};               // the DequantizeLinear's output, "<quantizer>.dequantize"
    std::string probe_output{};         // the graph output that returns it in the probe
    std::vector<float> scale{};         // the DequantizeLinear's, one or one per channel
    std::vector<float> quantize_scale{};  // the QuantizeLinear's that feeds it (empty when none does)
};

// Writes the model at `model_path` to `probe_path` with the outputs `kind` adds (float, shape left
// to the runtime); returns the quantizers they stand for, in graph order. Throws naming the file
// when it cannot be read or written.
std::vector<DequantizedValue> write_probe(const std::string& model_path, const std::string& probe_path, ProbeKind kind);

}  // namespace qdq
