// A copy of an exported model that also returns what every DequantizeLinear computes, so that
// the framework's fake-quantized tensors can be compared with ONNX Runtime's one by one
// (stages/onnx_fidelity.h). Run it without graph optimizations: ONNX Runtime 1.30 fails to start a
// session that constant-folds a weight's QuantizeLinear whose DequantizeLinear is a graph output.
#pragma once

#include <string>
#include <vector>

namespace qdq {

// One DequantizeLinear of the graph: its output and the constants that set its codes and values.
struct DequantizedValue {
    std::string output{};               // "<quantizer>.dequantize"
    std::vector<float> scale{};         // the DequantizeLinear's, one or one per channel
    std::vector<float> quantize_scale{};  // the QuantizeLinear's that feeds it (empty when none does)
};

// Writes the model at `model_path` to `probe_path` with every DequantizeLinear output added to
// the graph's outputs (float, shape left to the runtime); returns them in graph order. Throws
// naming the file when it cannot be read or written.
std::vector<DequantizedValue> write_dequantized_probe(const std::string& model_path, const std::string& probe_path);

}  // namespace qdq
