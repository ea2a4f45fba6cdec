// QDQBERT's quantizer sites in a BERT encoder layer, the one place their names are spelt:
// placement attaches quantizers under them (qdqbert/qdq_placement.h), a checkpoint holds each
// range as "<module>.<quantizer>._amax" (nn/module.h), and ONNX export puts a Q/DQ pair wherever
// the state holds one (onnx/onnx_export.h).
#pragma once

#include <string>

namespace qdq::nn::quantizer_sites {

// A Linear (PQ's QuantLinear): its input and its weight.
inline constexpr const char* kLinearInput = "_input_quantizer";
inline constexpr const char* kLinearWeight = "_weight_quantizer";
// BertSelfAttention: both operands of Q·Kᵀ and of probabilities·V.
inline constexpr const char* kMatmulQ = "matmul_q_input_quantizer";
inline constexpr const char* kMatmulK = "matmul_k_input_quantizer";
inline constexpr const char* kMatmulV = "matmul_v_input_quantizer";
inline constexpr const char* kMatmulA = "matmul_a_input_quantizer";
// BertResidualOutput: the layer's own output and the residual, the two addends before LayerNorm.
inline constexpr const char* kAddLocal = "add_local_input_quantizer";
inline constexpr const char* kAddResidual = "add_residual_input_quantizer";

// The modules of encoder layer i that hold them, under "bert.encoder.layer.<i>.".
inline constexpr const char* kLinears[] = {"attention.self.query",   "attention.self.key",  "attention.self.value",
                                           "attention.output.dense", "intermediate.dense", "output.dense"};
inline constexpr const char* kAttention = "attention.self";
inline constexpr const char* kResidualOutputs[] = {"attention.output", "output"};

// The state_dict key of a quantizer's range.
inline std::string amax_key(const std::string& module, const char* quantizer) {
    return module + "." + quantizer + "._amax";
}

}  // namespace qdq::nn::quantizer_sites
