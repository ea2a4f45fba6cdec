// Where a BERT is fake-quantized, as Hugging Face's QDQBERT places PQ's quantizers, and the
// options of HF's quant_trainer.py recipe, read from a run config's "quantization" section:
//
//   {"input":  {QuantDescriptor},  activations (quant/quant_descriptor.h); default per tensor,
//                                  8 bits, histogram calibration (the recipe's)
//    "weight": {QuantDescriptor},  default per channel over axis 0 of [out, in], max calibration;
//                                  keys left out of either keep these defaults
//    "per_tensor_weights": false,  one amax per weight instead (--quant-per-tensor)
//    "quantize_attention": true,   both operands of Q·Kᵀ and of probabilities·V
//    "quantize_residual": true,    both addends of the two residual adds before LayerNorm
//    "disable": ["regex", ...],    quantizers whose full name matches are not attached
//                                  (--quant-disable-keyword; e.g. "layer\\.0\\.", "_weight_")
//    "disable_layers": [0, 11],    every quantizer of these encoder layers (--quant-disable-layer-module)
//    "calibrator": "percentile",   max | percentile | mse | entropy: how activation ranges are chosen
//    "percentile": 99.99,
//    "calibration_examples": 128,  training examples run through the model to calibrate
//    "fuse_qkv": false,            the outputs of Q, K and V (inputs of Q·Kᵀ and probs·V) share one
//                                  range, the largest, and so do their weights when per tensor (--fuse-qkv)
//    "clip_gelu": null,            cap the input amax of each output.dense at this (--clip-gelu)
//    "recalibrate_weights": false} weight ranges from the current weights, per channel, before QAT
//                                  (--recalibrate-weights)
//
// Embeddings, LayerNorm, softmax, GELU, the attention scale and mask, the pooler and the task
// heads stay in float, as in QDQBERT. Quantizer names are QDQBERT's state_dict prefixes:
// "bert.encoder.layer.3.attention.self.query._input_quantizer",
// "bert.encoder.layer.3.attention.self.matmul_q_input_quantizer",
// "bert.encoder.layer.3.output.add_residual_input_quantizer", ...
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/bert.h"
#include "quant/quant_descriptor.h"
#include "quant/tensor_quantizer.h"

namespace qdq {

struct QuantizationConfig {
    QuantDescriptor input{.calib_method = CalibMethod::Histogram};
    QuantDescriptor weight = linear_weight_descriptor();
    bool per_tensor_weights = false;
    bool quantize_attention = true;
    bool quantize_residual = true;
    std::vector<std::string> disable;
    std::vector<int> disable_layers;
    CalibrationMethod calibrator;  // "calibrator" and "percentile"
    int64_t calibration_examples = 128;
    bool fuse_qkv = false;
    std::optional<float> clip_gelu;
    bool recalibrate_weights = false;
};

// Unknown keys, wrong types and impossible values are errors naming "quantization.<key>".
QuantizationConfig quantization_config_from_json(const nlohmann::json& j, const std::string& source);
nlohmann::json quantization_config_to_json(const QuantizationConfig& config);

// Attaches the quantizers the config asks for to `bert`, named as inside a task model
// ("bert.encoder..."). Every quantizer starts in Quantizing mode with amax NaN, i.e. it
// must be calibrated or loaded from a checkpoint before use. Returns the attached names.
std::vector<std::string> attach_bert_quantizers(nn::BertModel& bert, const QuantizationConfig& config);

// Every quantizer of `model` to `mode` (calibration: Calibrating; evaluation and QAT: Quantizing).
void set_quant_mode(const nn::Module& model, QuantMode mode);

// Weight ranges from the current weights (per channel max, as PQ's max calibrator on the weight).
void calibrate_weights(const nn::Module& model);

// The QDQBERT recipe's range rewrites, applied after calibration: fuse_qkv and clip_gelu.
void apply_range_options(nn::BertModel& bert, const QuantizationConfig& config);

}  // namespace qdq
