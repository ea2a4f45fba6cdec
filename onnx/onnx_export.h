// A trained BERT as an ONNX model (opset 13) that ONNX Runtime and TensorRT run: the float
// graph op for op as nn/bert.cpp computes it, plus QuantizeLinear → DequantizeLinear pairs
// wherever the state holds a quantizer range (QDQBERT's placement).
//
// Graph: inputs input_ids, attention_mask, token_type_ids (int64 [batch, sequence]); outputs
// logits [batch, num_labels] (sequence classification) or start_logits, end_logits
// [batch, sequence] (question answering). Embedding Gathers; position rows sliced from the table
// by the input's length; LayerNorm spelled out (ReduceMean, Sub, Pow, Add, Sqrt, Div, Mul, Add:
// opset 13 has no LayerNormalization); Linear as MatMul with the weight transposed to [in, out],
// then Add; HF's additive mask (1 - mask) · lowest float; GELU with Erf; Tanh pooler. ORT's
// optimizer fuses these LayerNorms into LayerNormalization and bias + GELU into BiasGelu.
//
// Quantizers: the state's keys as QDQBERT's state_dict names them, each optional (absent = that
// quantizer is disabled = no Q/DQ there):
//   <linear>._input_quantizer._amax, <linear>._weight_quantizer._amax for each encoder Linear
//     (attention.self.{query,key,value}, attention.output.dense, intermediate.dense, output.dense)
//     and, should a model quantize them (QDQBERT does not), bert.pooler.dense, classifier and
//     qa_outputs;
//   bert.encoder.layer.N.attention.self.matmul_{q,k,v,a}_input_quantizer._amax (both inputs of
//     Q·Kᵀ, and the probabilities (a) and V of P·V);
//   bert.encoder.layer.N.{attention.output,output}.add_{local,residual}_input_quantizer._amax
//     (the dense output and the residual, the addends before LayerNorm).
// An activation amax has one element (per tensor). A weight amax has one element or out_features
// (per channel over axis 0 of the [out, in] weight, which is axis 1 of the [in, out] initializer:
// the axis attribute is always written: ONNX defaults an omitted one to 1, TensorRT 8.x to 0).
// Any other `_amax` key is an error: a quantizer the export would drop.
// Scale = amax/127, zero point 0, int8 range [-128, 127] (PQ's descriptor default, narrow_range
// false). A weight channel with amax ≤ 2^-24 is exported as zeros, as PQ's fake quantization
// outputs 0 there; such an activation amax is an error. A weight's codes are PQ's,
// round(w·(127/amax)), however a runtime rounds.
//
// tensorrt files store weights as PQ's fake quantization makes them, code/(127/amax) in float32,
// with their own QuantizeLinear → DequantizeLinear (QuantizeLinear finds PQ's codes in them), the
// form PQ's export writes. TensorRT's explicit quantization guide documents float weights
// quantized through the Q scale at build time; its 8.x ONNX parser turns a DequantizeLinear's
// input into a network tensor and rejects inputs that are not float activations (onnx-tensorrt
// issue #850, onnxruntime issue #14229, both int32 biases; int8 weights there are unverified
// here), and it takes a missing per-channel axis as 0, not ONNX's 1.
// onnxruntime-cpu files store the int8 codes, feeding only a DequantizeLinear, as ONNX Runtime's
// own quantization tool writes them: a quarter of the float weights' bytes. ORT fuses
// DequantizeLinear → MatMul into integer kernels either way (it constant-folds tensorrt's weight
// QuantizeLinear into the same codes): tests/test_onnx.cpp checks that no float MatMul is left in
// the optimized onnxruntime-cpu encoder.
//
// Activations round as QuantizeLinear does, round(x / (amax/127)), where PQ computes
// round(x·(127/amax)) in float32: the two part where x·127/amax lies within an ulp of k + ½.
// Exporting PQ's rounding exactly (a Mul by 127/amax, then QuantizeLinear with scale 1) cost 15%
// of ONNX Runtime's time at BERT-mini's shape and left the labels as they were, 994 of the main
// job's 1,000 test reviews the framework's: float rounding elsewhere (LayerNorm, softmax, GELU;
// matrix products too, before the framework computed them on the codes, quant/integer_product.h)
// moves codes far more often (stages/onnx_fidelity.h shows where).
//
// Targets: tensorrt — every Q/DQ int8 with zero point 0 (TensorRT takes symmetric int8 only).
// onnxruntime-cpu — activations uint8 with zero point 128 (the same numbers shifted: q + 128),
// weights int8: U8S8, the pairing x86 int8 dot products (VPMADDUBSW, VNNI) take natively. ORT
// 1.30 fuses both files' pairs into the same kernels (MatMulIntegerToFloat for the Linears and
// Q·Kᵀ, QLinearMatMul for P·V; tests/test_onnx_tasks.cpp counts them).
// For onnxruntime-cpu, a quantized weight whose input quantizer is disabled is stored already
// fake-quantized, as float: ORT fuses DequantizeLinear(weight) → MatMul with a float input into
// MatMulNBits, which by default (session.qdq_matmulnbits_accuracy_level 4) quantizes that input
// to int8 on the fly, a quantization the model never did. tensorrt files keep that Q/DQ; ORT
// gives ONNX's meaning at accuracy level 1, which run_onnxruntime sets (onnx/onnx_runtime.h).
#pragma once

#include <string>
#include <utility>

#include "autograd/named_tensors.h"
#include "nn/bert_config.h"
#include "quant/qdq_target.h"

namespace qdq {

enum class OnnxHead { SequenceClassification, QuestionAnswering };

struct OnnxExportOptions {
    QdqTarget target = QdqTarget::TensorRT;
    // PQ's PACT (learn_amax) on the activations' descriptor or the weights': such a quantizer
    // clips x to ±amax before it quantizes, so its lowest code is −127 where QuantizeLinear alone
    // saturates at −128. The export writes the clip too: a Clip before each activation's
    // QuantizeLinear, and the weights' codes taken from their clipped values.
    bool clip_inputs_to_amax = false, clip_weights_to_amax = false;
};

// A quantizer's name in the graph, which prefixes its Q/DQ nodes and parameters: the module's
// state_dict name without "bert.encoder." or "bert." ("layer.3.attention.self.query._input_quantizer";
// its DequantizeLinear's output is that name + ".dequantize").
std::string onnx_quantizer_name(const std::string& quantizer);

// `state`: the task model's state_dict with HF names (bert.*, and classifier.* or qa_outputs.*;
// no pooler for QA), float32, plus any quantizer ranges. Extra keys that are not `_amax` are
// ignored (optimizer state, HF's position_ids buffer). The model is checked with ONNX's checker
// and strict shape inference before it is written; errors throw std::runtime_error naming the
// key or the ONNX complaint.
void export_onnx(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                 const OnnxExportOptions& options, const std::string& path);

// The same model serialized (what export_onnx writes), for callers that keep it in memory.
std::string export_onnx_bytes(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                              const OnnxExportOptions& options);

}  // namespace qdq
