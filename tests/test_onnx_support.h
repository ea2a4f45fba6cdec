// What the ONNX export tests share: a tiny random BERT, padded batches, the fake-quantized
// reference forward, and the two outside programs that judge an export: ONNX Runtime (through
// onnx/onnx_runtime.h) and the python3-onnx checker.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "onnx/onnx_export.h"
#include "onnx/onnx_runtime.h"
#include "nn/bert.h"
#include "tests/support/tiny_bert_config.h"  // tiny_bert_config, which every ONNX test builds

namespace qdq::testing {

// The state_dict of a freshly built task model with every parameter redrawn so that nothing is
// trivial: weights N(0, 0.3) with each output row of the encoder Linears scaled by its own
// factor in [0.25, 2] (per-channel ranges then differ by up to 8×, so a scale on the wrong axis
// shows), biases N(0, 0.1), LayerNorm γ = 1 + N(0, 0.1), β = N(0, 0.1).
NamedTensors random_bert_state(const nn::BertConfig& config, OnnxHead head, uint64_t seed);

// int32 [B, T] inputs: random ids, a zero-padded tail of a different length in every row but the
// first, segment 1 on the second half of each row's real tokens.
nn::BertInputs padded_batch(const nn::BertConfig& config, int64_t B, int64_t T, uint64_t seed);

// The framework's own eval-mode model (nn::BertForSequenceClassification or
// nn::BertForQuestionAnswering) loaded with `state`: logits, or start and end logits.
std::vector<Tensor> framework_forward(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                                      const nn::BertInputs& inputs);

// ONNX's QuantizeLinear → DequantizeLinear, int8, zero point 0: clamp(round_half_even(x / s),
// -128, 127) · s with s = amax/127, per tensor (amax of one element) or per channel over axis 0
// (one amax per row of a 2-D x). A channel with amax ≤ 2^-24 becomes 0, as in PQ.
Tensor fake_quant(const Tensor& x, const std::vector<float>& amax);

// The task model's forward written out with the framework's ops, fake-quantized wherever
// `state` holds a QDQBERT `_amax` key (see onnx/onnx_export.h for the placement). `observed`, if
// given, receives max|x| at every activation quantizer point, keyed by its `_amax` key: a max
// calibrator. Without any `_amax` key this is exactly framework_forward.
std::vector<Tensor> reference_forward(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                                      const nn::BertInputs& inputs, std::map<std::string, float>* observed = nullptr);

// Layer 1's matmul_a (attention probabilities) and attention.output.dense input quantizers: the
// `_amax` keys the QDQ tests leave out, to check that an absent range means no Q/DQ.
std::vector<std::string> two_disabled_quantizers();

// `state` plus synthetic ranges: activations 0.9 × the observed max (so some values clip);
// Linear weights per channel, 0.9 × each row's max|w|, except layer 1's intermediate.dense,
// per tensor. Quantizers named in `disabled` are left out, as are the pooler and heads
// (QDQBERT leaves them float).
NamedTensors with_synthetic_ranges(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                                   const nn::BertInputs& calibration,
                                   const std::vector<std::string>& disabled = two_disabled_quantizers());

// Empty when /usr/bin/python3's onnx (Debian's python3-onnx) accepts the file with
// onnx.checker.check_model(full_check=True), else its complaint.
std::string python_onnx_check(const std::string& model_path);

// Skip (or under CI=true fail) when node with onnx/onnxruntime/node_modules/onnxruntime-node, or
// python3 with onnx, is missing. Through the macros, which also leave the test body.
void require_onnxruntime();
void require_python_onnx();

}  // namespace qdq::testing

#define QDQ_REQUIRE(what)                                                               \
    do {                                                                                \
        ::qdq::testing::require_##what();                                               \
        if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return; \
    } while (0)
