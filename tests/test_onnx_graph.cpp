// The exported graphs read back with ONNX's protobuf classes: interface, node names, where each
// Q/DQ pair sits and what its scale, axis and zero point are. These need no runtime, so a wrong
// axis or scale fails here even where ONNX Runtime is missing; test_onnx.cpp checks the numbers
// that ORT computes from them. Also the test's own reference (fake_quant, reference_forward).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "autograd/ops.h"
#include "tests/support/gradcheck.h"
#include "tests/test_onnx_support.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

onnx::ModelProto exported(const NamedTensors& state, OnnxHead head, QdqTarget target = QdqTarget::TensorRT) {
    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromString(export_onnx_bytes(state, tiny_bert_config(), head, {target})));
    return model;
}

const onnx::NodeProto* find_node(const onnx::ModelProto& m, const std::string& name) {
    for (const onnx::NodeProto& n : m.graph().node())
        if (n.name() == name) return &n;
    return nullptr;
}

const onnx::TensorProto& initializer(const onnx::ModelProto& m, const std::string& name) {
    for (const onnx::TensorProto& t : m.graph().initializer())
        if (t.name() == name) return t;
    throw std::runtime_error("no initializer " + name);
}

std::vector<float> floats(const onnx::TensorProto& t) {
    std::vector<float> v(t.raw_data().size() / sizeof(float));
    std::memcpy(v.data(), t.raw_data().data(), t.raw_data().size());
    return v;
}

std::vector<int64_t> dims(const onnx::TensorProto& t) { return {t.dims().begin(), t.dims().end()}; }

// The node's "axis" attribute, or -99 when it has none.
int64_t axis_of(const onnx::NodeProto& n) {
    for (const onnx::AttributeProto& a : n.attribute())
        if (a.name() == "axis") return a.i();
    return -99;
}

std::vector<float> values_of(const NamedTensors& state, const std::string& key) {
    for (const NamedTensor& t : state)
        if (t.name == key) return t.tensor.to_vector();
    throw std::runtime_error("no " + key);
}

NamedTensors quantized_state(OnnxHead head, const std::vector<std::string>& disabled = two_disabled_quantizers()) {
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors state = random_bert_state(config, head, 5);
    return with_synthetic_ranges(state, config, head, padded_batch(config, 2, 8, 3), disabled);
}

std::string export_error(const NamedTensors& state, OnnxHead head) {
    try {
        export_onnx_bytes(state, tiny_bert_config(), head, {});
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(OnnxGraph, FloatGraphHasTheDocumentedInterfaceAndNames) {
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors state = random_bert_state(config, OnnxHead::SequenceClassification, 1);
    onnx::ModelProto m = exported(state, OnnxHead::SequenceClassification);
    ASSERT_EQ(m.opset_import_size(), 1);
    EXPECT_EQ(m.opset_import(0).version(), 13);
    ASSERT_EQ(m.graph().input_size(), 3);
    const char* inputs[] = {"input_ids", "attention_mask", "token_type_ids"};
    for (int i = 0; i < 3; ++i) {
        const onnx::ValueInfoProto& in = m.graph().input(i);
        EXPECT_EQ(in.name(), inputs[i]);
        EXPECT_EQ(in.type().tensor_type().elem_type(), onnx::TensorProto::INT64);
        EXPECT_EQ(in.type().tensor_type().shape().dim(0).dim_param(), "batch");
        EXPECT_EQ(in.type().tensor_type().shape().dim(1).dim_param(), "sequence");
    }
    ASSERT_EQ(m.graph().output_size(), 1);
    EXPECT_EQ(m.graph().output(0).name(), "logits");
    std::set<std::string> names;
    for (const onnx::NodeProto& n : m.graph().node()) {
        EXPECT_TRUE(names.insert(n.name()).second) << "duplicate node name " << n.name();
        EXPECT_NE(n.op_type(), "QuantizeLinear") << "a float export with a Q node: " << n.name();
    }
    for (const char* name : {"embeddings.LayerNorm", "attention_mask.additive", "layer.0.attention.qk_matmul",
                             "layer.0.attention.softmax", "layer.1.intermediate.gelu", "layer.1.output.LayerNorm",
                             "pooler", "classifier.matmul"})
        EXPECT_TRUE(names.count(name)) << "no node " << name;
    // Linear weights are stored [in, out]: element (i, o) is HF's weight[o][i].
    const onnx::TensorProto& w = initializer(m, "bert.encoder.layer.0.intermediate.dense.weight.transposed");
    ASSERT_EQ(dims(w), (std::vector<int64_t>{config.hidden_size, config.intermediate_size}));
    std::vector<float> hf = values_of(state, "bert.encoder.layer.0.intermediate.dense.weight"), t = floats(w);
    for (int64_t o = 0; o < config.intermediate_size; ++o)
        for (int64_t i = 0; i < config.hidden_size; ++i)
            ASSERT_EQ(t[i * config.intermediate_size + o], hf[o * config.hidden_size + i]);

    onnx::ModelProto qa = exported(random_bert_state(config, OnnxHead::QuestionAnswering, 1), OnnxHead::QuestionAnswering);
    ASSERT_EQ(qa.graph().output_size(), 2);
    EXPECT_EQ(qa.graph().output(0).name(), "start_logits");
    EXPECT_EQ(qa.graph().output(1).name(), "end_logits");
    EXPECT_EQ(find_node(qa, "pooler"), nullptr);
}

// Q/DQ exactly where the state holds a range, feeding exactly the input QDQBERT quantizes.
TEST(OnnxGraph, QdqPairsSitExactlyWhereTheRangesAre) {
    NamedTensors state = quantized_state(OnnxHead::SequenceClassification);
    onnx::ModelProto m = exported(state, OnnxHead::SequenceClassification);
    std::map<std::string, std::pair<std::string, int>> consumer;  // value -> (node, input index)
    int quantize_nodes = 0;
    for (const onnx::NodeProto& n : m.graph().node()) {
        for (int i = 0; i < n.input_size(); ++i) consumer[n.input(i)] = {n.name(), i};
        quantize_nodes += n.op_type() == "QuantizeLinear";
    }
    int ranges = 0;
    for (const NamedTensor& t : state) ranges += t.name.ends_with("._amax");
    EXPECT_EQ(quantize_nodes, ranges);
    auto expect_feeds = [&](const std::string& quantizer, const std::string& node, int input) {
        ASSERT_NE(find_node(m, quantizer + ".quantize"), nullptr) << quantizer;
        EXPECT_EQ(consumer[quantizer + ".quantize"].first, quantizer + ".dequantize");
        EXPECT_EQ(consumer[quantizer + ".dequantize"], std::make_pair(node, input)) << quantizer;
    };
    for (const std::string l : {"layer.0.", "layer.1."}) {
        expect_feeds(l + "attention.self.query._input_quantizer", l + "attention.self.query.matmul", 0);
        expect_feeds(l + "attention.self.key._weight_quantizer", l + "attention.self.key.matmul", 1);
        expect_feeds(l + "attention.self.matmul_q_input_quantizer", l + "attention.qk_matmul", 0);
        expect_feeds(l + "attention.self.matmul_k_input_quantizer", l + "attention.qk_matmul", 1);
        expect_feeds(l + "attention.self.matmul_v_input_quantizer", l + "attention.pv_matmul", 1);
        expect_feeds(l + "attention.output.add_local_input_quantizer", l + "attention.output.residual_add", 0);
        expect_feeds(l + "attention.output.add_residual_input_quantizer", l + "attention.output.residual_add", 1);
        expect_feeds(l + "intermediate.dense._input_quantizer", l + "intermediate.dense.matmul", 0);
        expect_feeds(l + "output.dense._weight_quantizer", l + "output.dense.matmul", 1);
        expect_feeds(l + "output.add_residual_input_quantizer", l + "output.residual_add", 1);
    }
    expect_feeds("layer.0.attention.self.matmul_a_input_quantizer", "layer.0.attention.pv_matmul", 0);
    // Disabled in layer 1: the float value goes straight in.
    EXPECT_EQ(find_node(m, "layer.1.attention.self.matmul_a_input_quantizer.quantize"), nullptr);
    EXPECT_EQ(consumer["layer.1.attention.softmax"], std::make_pair(std::string("layer.1.attention.pv_matmul"), 0));
    EXPECT_EQ(consumer["layer.1.attention.context"],
              std::make_pair(std::string("layer.1.attention.output.dense.matmul"), 0));
    EXPECT_EQ(find_node(m, "pooler.dense._input_quantizer.quantize"), nullptr);

    // A quantized pooler (QDQBERT has none, but a Linear with ranges is exported as it ran).
    state.push_back({"bert.pooler.dense._input_quantizer._amax", full({}, 2.0f)});
    onnx::ModelProto pooled = exported(state, OnnxHead::SequenceClassification);
    ASSERT_NE(find_node(pooled, "pooler.dense._input_quantizer.quantize"), nullptr);
    EXPECT_EQ(find_node(pooled, "pooler.dense._input_quantizer.dequantize")->output(0),
              find_node(pooled, "pooler.dense.matmul")->input(0));
}

// Per channel over HF's axis 0 = the [in, out] initializer's axis 1, written explicitly (ONNX
// would default an omitted axis to 1, TensorRT 8.x to 0); scale = amax/127 per output channel.
TEST(OnnxGraph, WeightScalesRunAlongOutputChannels) {
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors state = quantized_state(OnnxHead::SequenceClassification);
    onnx::ModelProto m = exported(state, OnnxHead::SequenceClassification);
    for (const char* linear : {"attention.self.query", "intermediate.dense", "output.dense"}) {
        const std::string q = std::string("layer.0.") + linear + "._weight_quantizer";
        std::vector<float> amax = values_of(state, std::string("bert.encoder.layer.0.") + linear + "._weight_quantizer._amax");
        EXPECT_EQ(axis_of(*find_node(m, q + ".quantize")), 1) << q;
        EXPECT_EQ(axis_of(*find_node(m, q + ".dequantize")), 1) << q;
        const onnx::TensorProto& scale = initializer(m, q + ".scale");
        ASSERT_EQ(dims(scale), (std::vector<int64_t>{(int64_t)amax.size()})) << q;
        std::vector<float> s = floats(scale);
        for (size_t o = 0; o < amax.size(); ++o) EXPECT_EQ(s[o], amax[o] / 127.0f) << q << " channel " << o;
        EXPECT_EQ(dims(initializer(m, q + ".zero_point")), dims(scale));
    }
    EXPECT_EQ(floats(initializer(m, "layer.0.output.dense._weight_quantizer.scale")).size(),
              (size_t)config.hidden_size);  // out of [intermediate → hidden]
    // Per tensor: one rank-0 scale, no axis.
    const std::string t = "layer.1.intermediate.dense._weight_quantizer";
    EXPECT_EQ(axis_of(*find_node(m, t + ".quantize")), -99);
    EXPECT_TRUE(dims(initializer(m, t + ".scale")).empty());
    EXPECT_EQ(floats(initializer(m, t + ".scale"))[0],
              values_of(state, "bert.encoder.layer.1.intermediate.dense._weight_quantizer._amax")[0] / 127.0f);
    const std::string a = "layer.0.attention.self.query._input_quantizer";
    EXPECT_EQ(axis_of(*find_node(m, a + ".quantize")), -99);
    EXPECT_TRUE(dims(initializer(m, a + ".scale")).empty());
    EXPECT_EQ(floats(initializer(m, a + ".scale"))[0],
              values_of(state, "bert.encoder.layer.0.attention.self.query._input_quantizer._amax")[0] / 127.0f);
}

// tensorrt: int8, zero point 0 everywhere. onnxruntime-cpu: activations uint8 at 128, weights
// int8 at 0; the scales are the same numbers.
TEST(OnnxGraph, TargetsChooseTheZeroPoints) {
    NamedTensors state = quantized_state(OnnxHead::QuestionAnswering);
    onnx::ModelProto trt = exported(state, OnnxHead::QuestionAnswering, QdqTarget::TensorRT);
    onnx::ModelProto cpu = exported(state, OnnxHead::QuestionAnswering, QdqTarget::OnnxRuntimeCpu);
    int zero_points = 0;
    for (const onnx::TensorProto& z : trt.graph().initializer()) {
        if (!z.name().ends_with(".zero_point")) continue;
        ++zero_points;
        EXPECT_EQ(z.data_type(), onnx::TensorProto::INT8) << z.name();
        for (char b : z.raw_data()) EXPECT_EQ(b, 0) << z.name();
        const bool weight = z.name().find("_weight_quantizer") != std::string::npos;
        if (z.name() == "layer.1.attention.output.dense._weight_quantizer.zero_point") continue;  // folded, below
        const onnx::TensorProto& c = initializer(cpu, z.name());
        EXPECT_EQ(c.data_type(), weight ? onnx::TensorProto::INT8 : onnx::TensorProto::UINT8) << z.name();
        for (char b : c.raw_data()) EXPECT_EQ((uint8_t)b, weight ? 0 : 128) << z.name();
        const std::string scale = z.name().substr(0, z.name().size() - std::string(".zero_point").size()) + ".scale";
        EXPECT_EQ(floats(initializer(cpu, scale)), floats(initializer(trt, scale)));
    }
    EXPECT_GT(zero_points, 20);
}

// PQ's codes of a weight [rows, cols], per row when `amax` has one value a row: round(w·s) with
// s = 127/amax in float32 (pytorch_quantization's tensor_quant), 0 where amax vanishes; written
// out here rather than taken from quant/ so that a change there cannot carry the export along.
std::vector<float> pq_codes(const std::vector<float>& w, const std::vector<float>& amax, int64_t cols) {
    std::vector<float> out(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
        const float a = amax[amax.size() == 1 ? 0 : i / (size_t)cols];
        out[i] = a <= 0x1.0p-24f ? 0.0f : std::nearbyint(std::clamp(w[i] * (127.0f / a), -128.0f, 127.0f));
    }
    return out;
}

// PQ's fake quantization of that weight: its codes divided by s.
std::vector<float> pq_fake_quant(const std::vector<float>& w, const std::vector<float>& amax, int64_t cols) {
    std::vector<float> out = pq_codes(w, amax, cols);
    for (size_t i = 0; i < w.size(); ++i) {
        const float a = amax[amax.size() == 1 ? 0 : i / (size_t)cols];
        if (a > 0x1.0p-24f) out[i] /= 127.0f / a;
    }
    return out;
}

// onnxruntime-cpu stores a quantized weight as PQ's int8 codes feeding a DequantizeLinear (axis 1
// of [in, out] per channel), no QuantizeLinear and no float copy; tensorrt keeps the float
// weight and its pair. The encoder's weights take a quarter of their float bytes.
TEST(OnnxGraph, CpuTargetStoresWeightsAsTheirCodes) {
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors state = quantized_state(OnnxHead::QuestionAnswering);
    const std::string key = "bert.encoder.layer.0.intermediate.dense", q = "layer.0.intermediate.dense._weight_quantizer";
    const std::string trt = export_onnx_bytes(state, config, OnnxHead::QuestionAnswering, {QdqTarget::TensorRT});
    onnx::ModelProto cpu = exported(state, OnnxHead::QuestionAnswering, QdqTarget::OnnxRuntimeCpu);
    EXPECT_EQ(find_node(cpu, q + ".quantize"), nullptr);
    for (const onnx::TensorProto& t : cpu.graph().initializer()) EXPECT_NE(t.name(), key + ".weight.transposed");
    const onnx::NodeProto* dq = find_node(cpu, q + ".dequantize");
    ASSERT_NE(dq, nullptr);
    EXPECT_EQ(dq->input(0), q + ".codes");
    ASSERT_EQ(dq->attribute_size(), 1);
    EXPECT_EQ(dq->attribute(0).i(), 1);
    const onnx::TensorProto& codes = initializer(cpu, q + ".codes");
    const int64_t C = config.hidden_size, I = config.intermediate_size;
    ASSERT_EQ(codes.data_type(), onnx::TensorProto::INT8);
    ASSERT_EQ(dims(codes), (std::vector<int64_t>{C, I}));
    const std::vector<float> expected = pq_codes(values_of(state, key + ".weight"), values_of(state, key + "._weight_quantizer._amax"), C);
    int nonzero = 0;
    for (int64_t o = 0; o < I; ++o)
        for (int64_t i = 0; i < C; ++i) {
            const int8_t stored = (int8_t)codes.raw_data()[(size_t)(i * I + o)];
            ASSERT_EQ(stored, expected[(size_t)(o * C + i)]) << o << ", " << i;
            nonzero += stored != 0;
        }
    EXPECT_GT(nonzero, C * I / 2);
    EXPECT_LT(cpu.ByteSizeLong() + 2 * config.num_hidden_layers * (4 * C * C + 2 * C * I), trt.size());
}

// Every quantized weight is stored as PQ fake-quantizes it, so that QuantizeLinear finds PQ's
// codes; for onnxruntime-cpu, one whose input quantizer is disabled is stored so and no Q/DQ
// follows (ORT would otherwise quantize the input on the fly, see onnx_export.cpp).
TEST(OnnxGraph, CpuTargetFoldsAWeightWhoseInputIsFloat) {
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors state = quantized_state(OnnxHead::QuestionAnswering);  // layer 1 attention.output.dense input off
    const std::string q = "layer.1.attention.output.dense._weight_quantizer";
    const std::string key = "bert.encoder.layer.1.attention.output.dense";
    onnx::ModelProto trt = exported(state, OnnxHead::QuestionAnswering, QdqTarget::TensorRT);
    onnx::ModelProto cpu = exported(state, OnnxHead::QuestionAnswering, QdqTarget::OnnxRuntimeCpu);
    EXPECT_NE(find_node(trt, q + ".quantize"), nullptr);
    EXPECT_EQ(find_node(cpu, q + ".quantize"), nullptr);
    EXPECT_EQ(find_node(cpu, q + ".dequantize"), nullptr);
    EXPECT_NE(find_node(cpu, "layer.0.attention.output.dense._weight_quantizer.dequantize"), nullptr);
    const int64_t C = config.hidden_size;
    const std::vector<float> expected =
        pq_fake_quant(values_of(state, key + ".weight"), values_of(state, key + "._weight_quantizer._amax"), C);
    for (const onnx::ModelProto* m : {&trt, &cpu}) {
        std::vector<float> stored = floats(initializer(*m, key + ".weight.transposed"));
        for (int64_t o = 0; o < C; ++o)
            for (int64_t i = 0; i < C; ++i) ASSERT_EQ(stored[i * C + o], expected[o * C + i]) << o << ", " << i;
    }
}

TEST(OnnxGraph, VanishingWeightChannelIsExportedAsZeros) {
    NamedTensors state = quantized_state(OnnxHead::QuestionAnswering);
    const std::string key = "bert.encoder.layer.0.attention.self.value._weight_quantizer._amax";
    for (NamedTensor& t : state)
        if (t.name == key) {
            t.tensor = t.tensor.clone();
            t.tensor.f32()[3] = 0;
        }
    onnx::ModelProto m = exported(state, OnnxHead::QuestionAnswering);
    const int64_t C = tiny_bert_config().hidden_size;
    std::vector<float> w = floats(initializer(m, "bert.encoder.layer.0.attention.self.value.weight.transposed"));
    for (int64_t i = 0; i < C; ++i) EXPECT_EQ(w[i * C + 3], 0.0f);
    EXPECT_NE(w[4], 0.0f);
    EXPECT_EQ(floats(initializer(m, "layer.0.attention.self.value._weight_quantizer.scale"))[3], 1.0f);
}

// PQ's PACT (learn_amax) clips x to ±amax before quantizing, so its lowest code is −127 where
// QuantizeLinear alone saturates at −128. Exported so, each activation's QuantizeLinear reads a
// Clip at ±amax, and a weight's codes are PQ's codes of clamp(w, −amax, amax) (its amax halved
// here, so that both ends clip).
TEST(OnnxGraph, PactRangesAreExportedWithTheirClip) {
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors state = quantized_state(OnnxHead::QuestionAnswering);
    const std::string key = "bert.encoder.layer.0.intermediate.dense", q = "layer.0.intermediate.dense";
    for (NamedTensor& t : state)
        if (t.name == key + "._weight_quantizer._amax") t.tensor = mul_scalar(t.tensor, 0.5f);
    const OnnxExportOptions pact{.target = QdqTarget::OnnxRuntimeCpu, .clip_inputs_to_amax = true, .clip_weights_to_amax = true};
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromString(export_onnx_bytes(state, config, OnnxHead::QuestionAnswering, pact)));
    const onnx::ModelProto plain = exported(state, OnnxHead::QuestionAnswering, QdqTarget::OnnxRuntimeCpu);
    EXPECT_EQ(find_node(plain, q + "._input_quantizer.clip"), nullptr);
    const onnx::NodeProto* quantize = find_node(m, q + "._input_quantizer.quantize");
    ASSERT_NE(quantize, nullptr);
    const onnx::NodeProto* clip = find_node(m, quantize->input(0));
    ASSERT_NE(clip, nullptr);
    EXPECT_EQ(clip->op_type(), "Clip");
    const float a = values_of(state, key + "._input_quantizer._amax")[0];
    EXPECT_EQ(floats(initializer(m, clip->input(1))), std::vector<float>{-a});
    EXPECT_EQ(floats(initializer(m, clip->input(2))), std::vector<float>{a});

    const std::vector<float> amax = values_of(state, key + "._weight_quantizer._amax");
    std::vector<float> w = values_of(state, key + ".weight");
    const int64_t C = config.hidden_size, I = config.intermediate_size;
    for (size_t i = 0; i < w.size(); ++i) {
        const float bound = amax[amax.size() == 1 ? 0 : i / (size_t)C];
        w[i] = std::clamp(w[i], -bound, bound);
    }
    const std::vector<float> expected = pq_codes(w, amax, C);
    const onnx::TensorProto& codes = initializer(m, q + "._weight_quantizer.codes");
    int lowest = 0;
    for (int64_t o = 0; o < I; ++o)
        for (int64_t i = 0; i < C; ++i) {
            const int8_t stored = (int8_t)codes.raw_data()[(size_t)(i * I + o)];
            ASSERT_EQ(stored, expected[(size_t)(o * C + i)]) << o << ", " << i;
            lowest += stored == -127;
        }
    EXPECT_GT(lowest, 0) << "no weight clipped at its lower end";
}

TEST(OnnxGraph, RejectsWhatItCannotExportFaithfully) {
    const nn::BertConfig config = tiny_bert_config();
    NamedTensors cls = random_bert_state(config, OnnxHead::SequenceClassification, 2);
    auto with = [&](const std::string& key, Tensor amax) {
        NamedTensors s = cls;
        s.push_back({key, amax});
        return export_error(s, OnnxHead::SequenceClassification);
    };
    EXPECT_NE(with("bert.embeddings.LayerNorm._input_quantizer._amax", full({}, 1.0f)).find("bert.embeddings.LayerNorm"),
              std::string::npos);
    EXPECT_NE(with("bert.encoder.layer.0.intermediate.gelu_quantizer._amax", full({}, 1.0f)).find("not place"),
              std::string::npos);
    EXPECT_NE(with("bert.encoder.layer.0.attention.self.matmul_q_input_quantizer._amax", full({2}, 1.0f)).find("one element"),
              std::string::npos);
    EXPECT_NE(with("bert.encoder.layer.0.output.dense._weight_quantizer._amax", full({5, 1}, 1.0f)).find("shape [5, 1]"),
              std::string::npos);
    // Ranges over the input axis of a square weight: as many elements as output rows, wrong axis.
    EXPECT_NE(with("bert.encoder.layer.0.attention.self.query._weight_quantizer._amax", full({1, 32}, 1.0f))
                  .find("shape [1, 32]"),
              std::string::npos);
    EXPECT_NE(with("bert.encoder.layer.0.output.dense._input_quantizer._amax", full({}, -1.0f)).find(">= 0"),
              std::string::npos);
    EXPECT_NE(with("bert.encoder.layer.0.output.dense._input_quantizer._amax", full({}, 0.0f)).find("zeroes"),
              std::string::npos);
    EXPECT_NE(with("classifier.weight", full({3, 32}, 1.0f)).find("duplicate"), std::string::npos);
    NamedTensors qa = random_bert_state(config, OnnxHead::QuestionAnswering, 2);
    EXPECT_NE(export_error(qa, OnnxHead::SequenceClassification).find("bert.pooler.dense.weight"), std::string::npos);
    EXPECT_EQ(export_error(qa, OnnxHead::QuestionAnswering), "");
}

// The reference the QDQ exports are judged by: ONNX's Q/DQ arithmetic...
TEST(OnnxReference, FakeQuantRoundsHalfToEvenAndClampsAtMinus128) {
    // Row 0 with scale 1: halves round to even, the range is [-128, 127]. Row 1 with scale 0.1:
    // 0.25/0.1 = 2.5 rounds to 2.
    Tensor x = from_vector({2, 4}, {0.5f, 2.5f, 200.0f, -200.0f, 0.25f, 0.35f, -1.0f, 0.0f});
    std::vector<float> v = fake_quant(x, {127.0f, 12.7f}).to_vector();
    std::vector<float> expected = {0, 2, 127, -128, 0.2f, 0.4f, -1.0f, 0};
    for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], 1e-6f) << "element " << i;
    EXPECT_EQ(fake_quant(x, {0.0f}).to_vector(), std::vector<float>(8, 0.0f));  // PQ zeroes amax ≤ 2^-24
}

// ...and, with no ranges at all, exactly the framework's forward (so the QDQ comparison tests
// the export, not a second BERT implementation).
TEST(OnnxReference, WithoutRangesIsExactlyTheFrameworkForward) {
    const nn::BertConfig config = tiny_bert_config();
    nn::BertInputs batch = padded_batch(config, 3, 7, 4);
    for (OnnxHead head : {OnnxHead::SequenceClassification, OnnxHead::QuestionAnswering}) {
        NamedTensors state = random_bert_state(config, head, 3);
        std::vector<Tensor> ref = reference_forward(state, config, head, batch);
        std::vector<Tensor> fw = framework_forward(state, config, head, batch);
        ASSERT_EQ(ref.size(), fw.size());
        for (size_t i = 0; i < ref.size(); ++i) expect_close(ref[i], fw[i], 0, 0, "reference vs framework");
    }
}
