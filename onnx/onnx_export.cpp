// BERT as ONNX nodes, mirroring nn/bert.cpp and nn/heads.cpp line for line. Node names follow
// the module that computes them ("layer.3.attention.self.query.matmul"); initializers keep
// HF's state_dict keys, with ".transposed" on Linear weights stored [in, out] for MatMul.
#include "onnx/onnx_export.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "cuda/quant_math.h"
#include "json/json_fields.h"
#include "nn/bert_quantizers.h"
#include "onnx/onnx_graph.h"

namespace qdq {

using namespace onnx_graph;

namespace {

namespace sites = nn::quantizer_sites;

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error("export_onnx: " + message); }

// PQ's tensor_quant zeroes channels whose amax is at most this (pytorch_quantization/tensor_quant.py).
constexpr float kMinAmax = 1.0f / (1 << 24);
constexpr float kInt8Bound = 127.0f;

// The state by key, and which quantizer ranges the graph consumed: one left over is a quantizer
// the export would silently drop.
struct State {
    std::map<std::string, Tensor> tensors;
    std::set<std::string> used_amax;

    std::vector<float> get(const std::string& key, const Shape& shape) const {
        auto it = tensors.find(key);
        if (it == tensors.end()) fail("the state has no '" + key + "' (is the head right?)");
        const Tensor& t = it->second;
        if (t.dtype() != DType::F32 || t.shape() != shape)
            fail("'" + key + "' must be float32 " + shape_str(shape) + ", got " + dtype_name(t.dtype()) + " " +
                 shape_str(t.shape()));
        return t.is_cuda() ? t.to(Device::CPU).to_vector() : t.to_vector();
    }

    // The amax under `key`, or none when that quantizer is disabled.
    std::optional<std::vector<float>> amax(const std::string& key) {
        auto it = tensors.find(key);
        if (it == tensors.end()) return std::nullopt;
        used_amax.insert(key);
        const Tensor& t = it->second;
        if (t.dtype() != DType::F32) fail("'" + key + "' must be float32");
        std::vector<float> v = t.is_cuda() ? t.to(Device::CPU).to_vector() : t.to_vector();
        for (float a : v)
            if (!std::isfinite(a) || a < 0) fail("'" + key + "' holds " + std::to_string(a) + "; amax must be finite and >= 0");
        return v;
    }
};

struct Builder {
    onnx::GraphProto& g;
    State& state;
    const nn::BertConfig& config;
    const OnnxExportOptions& options;
    std::set<std::string> constants;

    // Constants shared by every node that needs them, created on first use.
    std::string f32(const std::string& name, float value) {
        if (constants.insert(name).second) add_f32(g, name, {}, {value});
        return name;
    }
    std::string i64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
        if (constants.insert(name).second) add_i64(g, name, dims, values);
        return name;
    }
};

// "bert.encoder.layer.3.attention.self.query._input_quantizer._amax" ->
// "layer.3.attention.self.query._input_quantizer" (and "bert.pooler..." -> "pooler..."), the
// module's node names: names its Q/DQ nodes and their parameters.
std::string quantizer_name(const std::string& amax_key) {
    return onnx_quantizer_name(amax_key.substr(0, amax_key.size() - std::string("._amax").size()));
}

// A pair's scale and zero point initializers and its axis attribute. `scale` has one element
// (per tensor: rank-0 parameters, no axis) or one per channel along `axis`.
struct QdqParams {
    std::string scale, zero_point;
    std::vector<Attr> attrs;
};

QdqParams qdq_params(Builder& b, const std::string& name, const std::vector<float>& scale, std::optional<int64_t> axis,
                     int32_t zero_point_type, int zero_point) {
    std::vector<int64_t> dims;
    std::vector<Attr> attrs;
    if (axis) {
        dims = {(int64_t)scale.size()};
        attrs = {{"axis", *axis}};
    }
    return {add_f32(b.g, name + ".scale", dims, scale),
            add_zero_point(b.g, name + ".zero_point", dims, zero_point_type, zero_point), attrs};
}

// x → QuantizeLinear → DequantizeLinear.
std::string qdq(Builder& b, const std::string& x, const std::string& name, const std::vector<float>& scale,
                std::optional<int64_t> axis, int32_t zero_point_type, int zero_point) {
    const QdqParams p = qdq_params(b, name, scale, axis, zero_point_type, zero_point);
    std::string q = add_node(b.g, "QuantizeLinear", name + ".quantize", {x, p.scale, p.zero_point}, p.attrs);
    return add_node(b.g, "DequantizeLinear", name + ".dequantize", {q, p.scale, p.zero_point}, p.attrs);
}

// An activation's fake quantization when the state holds its range, else x itself.
std::string quantize_activation(Builder& b, const std::string& x, const std::string& amax_key) {
    std::optional<std::vector<float>> amax = b.state.amax(amax_key);
    if (!amax) return x;
    if (amax->size() != 1) fail("'" + amax_key + "' must have one element (activations are per tensor)");
    if ((*amax)[0] <= kMinAmax) fail("'" + amax_key + "' is " + std::to_string((*amax)[0]) + ", which zeroes the tensor");
    // uint8 with zero point 128 is int8 with zero point 0 shifted by 128: the same clamp at
    // [-128, 127] quanta, the same values after DequantizeLinear.
    const bool unsigned_shifted = b.options.target == QdqTarget::OnnxRuntimeCpu;
    const std::string name = quantizer_name(amax_key);
    std::string clipped = x;
    if (b.options.clip_inputs_to_amax) {
        const std::string low = add_f32(b.g, name + ".clip_min", {}, {-(*amax)[0]});
        const std::string high = add_f32(b.g, name + ".clip_max", {}, {(*amax)[0]});
        clipped = add_node(b.g, "Clip", name + ".clip", {x, low, high});
    }
    return qdq(b, clipped, name, {(*amax)[0] / kInt8Bound}, std::nullopt,
               unsigned_shifted ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8, unsigned_shifted ? 128 : 0);
}

// A Linear's weight [out, in] as a MatMul operand [in, out], fake-quantized when the state holds
// its range: per channel over HF's axis 0 = the initializer's axis 1, PQ's codes
// round(w·127/amax) as PQ computes them. For tensorrt they are stored as PQ's fake-quantized
// weight, code/(127/amax) in float32, followed by a Q/DQ pair (QuantizeLinear's round(w/scale)
// finds the code: w/scale is within a few ulps of it, whichever way a runtime divides); for
// onnxruntime-cpu as the int8 codes themselves feeding a DequantizeLinear, a quarter of the
// bytes, which ONNX Runtime's quantization tool writes too. With `fold` the graph gets the float
// weight alone.
std::string linear_weight(Builder& b, const std::string& key, const std::string& name, int64_t in, int64_t out,
                          bool fold) {
    std::vector<float> w = b.state.get(key + ".weight", {out, in});
    const std::string amax_key = sites::amax_key(key, sites::kLinearWeight);
    std::optional<std::vector<float>> amax = b.state.amax(amax_key);
    std::vector<float> scale, divisor(out, 1.0f);
    if (amax) {
        // By shape, not count: a square weight's amax over axis 1 ([1, in]) has `out` elements too.
        const Shape& shape = b.state.tensors.at(amax_key).shape();
        if (amax->size() != 1 && shape != Shape{out, 1} && shape != Shape{out})
            fail("'" + amax_key + "' has shape " + shape_str(shape) + "; expected one element " +
                 "(per tensor) or [" + std::to_string(out) + ", 1] (per output channel, axis 0 of [out, in])");
        // PQ outputs 0 for a channel with a vanishing amax: zero codes, with any positive scale,
        // give exactly that.
        for (float a : *amax) scale.push_back(a <= kMinAmax ? 1.0f : a / kInt8Bound);
        for (int64_t o = 0; o < out; ++o) {
            const float a = (*amax)[amax->size() == 1 ? 0 : (size_t)o];
            const ChannelScale pq = channel_scale(a, kInt8Bound);
            divisor[(size_t)o] = pq.divisor;
            const float clip = b.options.clip_weights_to_amax ? a : INFINITY;
            for (int64_t i = 0; i < in; ++i) {
                float& v = w[(size_t)(o * in + i)];
                v = fake_quant_value(v, pq.scale, 1.0f, -128.0f, kInt8Bound, clip);  // w holds codes now
            }
        }
    }
    std::optional<int64_t> axis;
    if (scale.size() > 1) axis = 1;  // written, never left to ONNX's default
    const std::string quantizer = name + "." + sites::kLinearWeight;
    if (amax && !fold && b.options.target == QdqTarget::OnnxRuntimeCpu) {
        std::vector<int8_t> codes((size_t)(in * out));
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < in; ++i) codes[(size_t)(i * out + o)] = (int8_t)w[(size_t)(o * in + i)];
        const QdqParams p = qdq_params(b, quantizer, scale, axis, onnx::TensorProto::INT8, 0);
        const std::string init = add_i8(b.g, quantizer + ".codes", {in, out}, codes);
        return add_node(b.g, "DequantizeLinear", quantizer + ".dequantize", {init, p.scale, p.zero_point}, p.attrs);
    }
    std::vector<float> wt((size_t)(in * out));
    for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) wt[(size_t)(i * out + o)] = w[(size_t)(o * in + i)] / divisor[(size_t)o];
    std::string init = add_f32(b.g, key + ".weight.transposed", {in, out}, wt);
    if (!amax || fold) return init;
    return qdq(b, init, quantizer, scale, axis, onnx::TensorProto::INT8, 0);
}

// y = x·Wᵀ + b with both MatMul inputs fake-quantized where the state says so. The bias Add's
// output is `output` (the module's name unless a graph output). A quantized weight whose input
// is float is folded for onnxruntime-cpu (ORT's MatMulNBits would quantize that input, see the
// header); with one operand float there is no integer kernel to lose.
std::string linear(Builder& b, const std::string& x, const std::string& key, const std::string& name, int64_t in,
                   int64_t out, const std::string& output = "") {
    std::string xq = quantize_activation(b, x, sites::amax_key(key, sites::kLinearInput));
    const bool fold = xq == x && b.options.target == QdqTarget::OnnxRuntimeCpu;
    std::string w = linear_weight(b, key, name, in, out, fold);
    std::string mm = add_node(b.g, "MatMul", name + ".matmul", {xq, w});
    std::string bias = add_f32(b.g, key + ".bias", {out}, b.state.get(key + ".bias", {out}));
    const std::string y = output.empty() ? name : output;
    add_node_outputs(b.g, "Add", name, {mm, bias}, {y});
    return y;
}

// (x − mean) / sqrt(var + eps) · γ + β over the last axis, as torch.onnx spells LayerNorm for
// opsets without LayerNormalization (and as ORT's LayerNormFusion matches it).
std::string layer_norm(Builder& b, const std::string& x, const std::string& key, const std::string& name) {
    const int64_t C = b.config.hidden_size;
    std::string mean = add_node(b.g, "ReduceMean", name + ".mean", {x}, {{"axes", std::vector<int64_t>{-1}}});
    std::string centered = add_node(b.g, "Sub", name + ".centered", {x, mean});
    std::string squared = add_node(b.g, "Pow", name + ".squared", {centered, b.f32("const.two", 2.0f)});
    std::string var = add_node(b.g, "ReduceMean", name + ".variance", {squared}, {{"axes", std::vector<int64_t>{-1}}});
    std::string var_eps = add_node(b.g, "Add", name + ".variance_eps", {var, b.f32("const.layer_norm_eps", b.config.layer_norm_eps)});
    std::string stddev = add_node(b.g, "Sqrt", name + ".stddev", {var_eps});
    std::string normed = add_node(b.g, "Div", name + ".normalized", {centered, stddev});
    std::string gamma = add_f32(b.g, key + ".weight", {C}, b.state.get(key + ".weight", {C}));
    std::string beta = add_f32(b.g, key + ".bias", {C}, b.state.get(key + ".bias", {C}));
    std::string scaled = add_node(b.g, "Mul", name + ".scaled", {normed, gamma});
    return add_node(b.g, "Add", name, {scaled, beta});
}

// x · ½(1 + erf(x/√2)), the exact GELU, in the order ORT's GeluFusion matches.
std::string gelu(Builder& b, const std::string& x, const std::string& name) {
    std::string scaled = add_node(b.g, "Div", name + ".div_sqrt2", {x, b.f32("const.sqrt2", std::sqrt(2.0f))});
    std::string erf = add_node(b.g, "Erf", name + ".erf", {scaled});
    std::string cdf = add_node(b.g, "Add", name + ".one_plus_erf", {erf, b.f32("const.one", 1.0f)});
    std::string prod = add_node(b.g, "Mul", name + ".times_x", {x, cdf});
    return add_node(b.g, "Mul", name, {prod, b.f32("const.half", 0.5f)});
}

std::string embeddings(Builder& b) {
    const nn::BertConfig& c = b.config;
    const std::string k = "bert.embeddings.";
    const int64_t C = c.hidden_size;
    auto table = [&](const std::string& name, int64_t rows) {
        return add_f32(b.g, k + name + ".weight", {rows, C}, b.state.get(k + name + ".weight", {rows, C}));
    };
    std::string words = add_node(b.g, "Gather", "embeddings.word_embeddings", {table("word_embeddings", c.vocab_size), "input_ids"});
    // Positions 0..T-1 are the table's first T rows: a Slice by the input's length.
    std::string shape = add_node(b.g, "Shape", "embeddings.input_shape", {"input_ids"});
    std::string zero = b.i64("const.zero_1d", {1}, {0}), one = b.i64("const.one_1d", {1}, {1});
    std::string length = add_node(b.g, "Slice", "embeddings.sequence_length", {shape, one, b.i64("const.two_1d", {1}, {2}), zero});
    std::string positions = add_node(b.g, "Slice", "embeddings.position_embeddings",
                                     {table("position_embeddings", c.max_position_embeddings), zero, length, zero});
    std::string types = add_node(b.g, "Gather", "embeddings.token_type_embeddings",
                                 {table("token_type_embeddings", c.type_vocab_size), "token_type_ids"});
    // (words + positions) + types, the framework's order of summation.
    std::string sum = add_node(b.g, "Add", "embeddings.add_positions", {words, positions});
    sum = add_node(b.g, "Add", "embeddings.add_token_types", {sum, types});
    return layer_norm(b, sum, k + "LayerNorm", "embeddings.LayerNorm");
}

// HF's extended attention mask, (1 − mask) · lowest float, [batch, 1, 1, sequence]; exp() of
// the lowest float after the row max is subtracted is exactly 0, as in nn::additive_attention_mask.
std::string attention_mask(Builder& b) {
    std::string expanded = add_node(b.g, "Unsqueeze", "attention_mask.expanded",
                                    {"attention_mask", b.i64("const.axes_1_2", {2}, {1, 2})});
    std::string mask = add_node(b.g, "Cast", "attention_mask.float", {expanded}, {{"to", int64_t{onnx::TensorProto::FLOAT}}});
    std::string inverted = add_node(b.g, "Sub", "attention_mask.inverted", {b.f32("const.one", 1.0f), mask});
    return add_node(b.g, "Mul", "attention_mask.additive",
                    {inverted, b.f32("const.lowest", std::numeric_limits<float>::lowest())});
}

// dense → (residual add) → LayerNorm, both addends fake-quantized where QDQBERT puts quantizers.
std::string residual_output(Builder& b, const std::string& x, const std::string& residual, const std::string& key,
                            const std::string& name, int64_t in) {
    std::string dense = linear(b, x, key + ".dense", name + ".dense", in, b.config.hidden_size);
    std::string local = quantize_activation(b, dense, sites::amax_key(key, sites::kAddLocal));
    std::string res = quantize_activation(b, residual, sites::amax_key(key, sites::kAddResidual));
    std::string sum = add_node(b.g, "Add", name + ".residual_add", {local, res});
    return layer_norm(b, sum, key + ".LayerNorm", name + ".LayerNorm");
}

std::string encoder_layer(Builder& b, const std::string& x, const std::string& mask, int i) {
    const nn::BertConfig& c = b.config;
    const int64_t C = c.hidden_size, H = c.num_attention_heads, D = c.head_dim();
    const std::string k = "bert.encoder.layer." + std::to_string(i) + ".";
    const std::string n = "layer." + std::to_string(i) + ".";
    const std::string split = b.i64("const.split_heads_shape", {4}, {0, 0, H, D});  // 0: keep that dim
    auto heads = [&](const std::string& module, const std::vector<int64_t>& perm, const std::string& suffix) {
        std::string y = linear(b, x, k + "attention.self." + module, n + "attention.self." + module, C, C);
        std::string s = add_node(b.g, "Reshape", n + "attention.self." + module + ".split_heads", {y, split});
        return add_node(b.g, "Transpose", n + "attention.self." + module + suffix, {s}, {{"perm", perm}});
    };
    std::string q = heads("query", {0, 2, 1, 3}, ".heads");             // [B, H, T, D]
    std::string kt = heads("key", {0, 2, 3, 1}, ".heads_transposed");   // [B, H, D, T]
    std::string v = heads("value", {0, 2, 1, 3}, ".heads");             // [B, H, T, D]
    const std::string self = k + sites::kAttention;
    std::string scores = add_node(b.g, "MatMul", n + "attention.qk_matmul",
                                  {quantize_activation(b, q, sites::amax_key(self, sites::kMatmulQ)),
                                   quantize_activation(b, kt, sites::amax_key(self, sites::kMatmulK))});
    std::string scaled = add_node(b.g, "Mul", n + "attention.scale",
                                  {scores, b.f32("const.attention_scale", 1.0f / std::sqrt((float)D))});
    std::string masked = add_node(b.g, "Add", n + "attention.mask_add", {scaled, mask});
    std::string probs = add_node(b.g, "Softmax", n + "attention.softmax", {masked}, {{"axis", int64_t{-1}}});
    std::string context = add_node(b.g, "MatMul", n + "attention.pv_matmul",
                                   {quantize_activation(b, probs, sites::amax_key(self, sites::kMatmulA)),
                                    quantize_activation(b, v, sites::amax_key(self, sites::kMatmulV))});
    context = add_node(b.g, "Transpose", n + "attention.context_transposed", {context},
                       {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    context = add_node(b.g, "Reshape", n + "attention.context",
                       {context, b.i64("const.merge_heads_shape", {3}, {0, 0, C})});  // [B, T, C]
    std::string attended = residual_output(b, context, x, k + "attention.output", n + "attention.output", C);
    std::string hidden = linear(b, attended, k + "intermediate.dense", n + "intermediate.dense", C, c.intermediate_size);
    hidden = gelu(b, hidden, n + "intermediate.gelu");
    return residual_output(b, hidden, attended, k + "output", n + "output", c.intermediate_size);
}

void task_head(Builder& b, const std::string& sequence, OnnxHead head) {
    const nn::BertConfig& c = b.config;
    const int64_t C = c.hidden_size;
    if (head == OnnxHead::SequenceClassification) {
        std::string first = add_node(b.g, "Gather", "pooler.first_token", {sequence, b.i64("const.zero", {}, {0})},
                                     {{"axis", int64_t{1}}});  // [B, C]
        std::string pooled = add_node(b.g, "Tanh", "pooler", {linear(b, first, "bert.pooler.dense", "pooler.dense", C, C)});
        linear(b, pooled, "classifier", "classifier", C, c.num_labels, "logits");
        add_output(b.g, "logits", onnx::TensorProto::FLOAT, {"batch", int64_t{c.num_labels}});
        return;
    }
    std::string span = linear(b, sequence, "qa_outputs", "qa_outputs", C, 2);  // [B, T, 2]: start, end
    add_node_outputs(b.g, "Split", "qa_outputs.split", {span}, {"qa_outputs.start", "qa_outputs.end"},
                     {{"axis", int64_t{2}}});
    const std::string axis = b.i64("const.two_1d", {1}, {2});
    add_node(b.g, "Squeeze", "start_logits", {"qa_outputs.start", axis});
    add_node(b.g, "Squeeze", "end_logits", {"qa_outputs.end", axis});
    add_output(b.g, "start_logits", onnx::TensorProto::FLOAT, {"batch", "sequence"});
    add_output(b.g, "end_logits", onnx::TensorProto::FLOAT, {"batch", "sequence"});
}

onnx::ModelProto build_model(const NamedTensors& named, const nn::BertConfig& config, OnnxHead head,
                             const OnnxExportOptions& options) {
    if (config.hidden_act != "gelu") fail("hidden_act '" + config.hidden_act + "' is not exported (only \"gelu\")");
    if (config.hidden_size % config.num_attention_heads != 0)
        fail("hidden_size is not a multiple of num_attention_heads");
    State state;
    for (const NamedTensor& t : named)
        if (!state.tensors.emplace(t.name, t.tensor).second) fail("duplicate key '" + t.name + "'");

    onnx::ModelProto model;
    model.set_ir_version(7);  // ONNX 1.8's IR, which introduced opset 13: readable by every opset-13 runtime
    model.set_producer_name("qdqtrain");
    onnx::OperatorSetIdProto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    onnx::GraphProto& g = *model.mutable_graph();
    g.set_name(head == OnnxHead::SequenceClassification ? "BertForSequenceClassification" : "BertForQuestionAnswering");
    for (const char* input : {"input_ids", "attention_mask", "token_type_ids"})
        add_input(g, input, onnx::TensorProto::INT64, {"batch", "sequence"});

    Builder b{g, state, config, options, {}};
    std::string mask = attention_mask(b);
    std::string x = embeddings(b);
    for (int i = 0; i < config.num_hidden_layers; ++i) x = encoder_layer(b, x, mask, i);
    task_head(b, x, head);

    for (const auto& [key, tensor] : state.tensors)
        if (key.ends_with("._amax") && !state.used_amax.count(key))
            fail("'" + key + "' is a quantizer this export does not place (Linear inputs and weights, "
                 "attention matmuls and residual adds only); remove it or disable that quantizer");
    return model;
}

// ONNX's own checker, then strict shape inference (types and shapes through every node, merged
// with the declared outputs), before anything is written.
void validate(onnx::ModelProto& model) {
    try {
        onnx::checker::check_model(model);
        onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(true, 1, true));
    } catch (const std::exception& e) {
        fail(std::string("ONNX rejects the graph: ") + e.what());
    }
}

}  // namespace

std::string onnx_quantizer_name(const std::string& quantizer) {
    for (const std::string prefix : {"bert.encoder.", "bert."})
        if (quantizer.starts_with(prefix)) return quantizer.substr(prefix.size());
    return quantizer;
}

std::string export_onnx_bytes(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                              const OnnxExportOptions& options) {
    onnx::ModelProto model = build_model(state, config, head, options);
    validate(model);
    std::string bytes;
    // protobuf refuses messages of 2 GiB and more: BERT-large in float is 1.3 GB.
    if (!model.SerializeToString(&bytes)) fail("protobuf could not serialize the model (2 GiB limit?)");
    return bytes;
}

void export_onnx(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                 const OnnxExportOptions& options, const std::string& path) {
    std::string bytes = export_onnx_bytes(state, config, head, options);
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), (std::streamsize)bytes.size());
    if (!out) fail("cannot write " + path);
}

}  // namespace qdq
