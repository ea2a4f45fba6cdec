// QDQBERT's quantizer placement (qdqbert/qdq_placement.h) against tests/fixtures/
// make_qdq_bert_reference.py: Hugging Face's QDQBERT restated in PyTorch with PQ's fake
// quantization, on the tiny BERT of bert_tiny/ with padded inputs, in eval mode.
//  - Names: the quantizers attached are QDQBERT's, and the state_dict (parameters and every
//    "<quantizer>._amax") loads from the reference's with nothing missing or unexpected.
//  - Numerics: logits, loss and every parameter gradient match to test_bert.cpp's float32
//    tolerance (1e-4 relative, summation order); reached: 2e-7 of max(1, max|reference|). Tie
//    flips: 0, by construction. The reference keeps every activation at least 1e-3 quantization
//    steps from a rounding boundary k + 1/2 and from ±amax (its float32 error, measured against
//    float64, is 3e-5 steps), so PyTorch and we pick the same code for every element. A flip
//    would move an element by a whole step (amax/127, ~2e-2 here), far outside the tolerance.
//  - The options of the QDQBERT recipe. The config's defaults and errors:
//    test_qdq_placement_config.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "autograd/tape.h"
#include "io/safetensors.h"
#include "nn/heads.h"
#include "nn/pretrained.h"
#include "nn/state_dict.h"
#include "qdqbert/qdq_placement.h"
#include "tests/support/expect_error.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using namespace qdq::nn;
using qdq::testing::expect_close;
using qdq::testing::expect_error;

namespace {

const std::string kDir = std::string(QDQ_FIXTURE_DIR) + "/bert_tiny/";
constexpr float kRtol = 1e-4f;  // test_bert.cpp's, for the same float32 model

struct Reference {
    NamedTensors state;               // QDQBERT's state_dict: parameters and amax buffers
    std::vector<std::string> names;   // its quantizers, in its module order
    std::map<std::string, Tensor> expected;
    std::map<std::string, Tensor> fp32;  // the unquantized model's outputs (make_bert_reference.py)
};

const Reference& reference() {
    static const Reference r = [] {
        Reference r;
        Safetensors file = load_safetensors(kDir + "qdq_seqcls.safetensors");
        r.state = file.tensors;
        r.names = nlohmann::json::parse(file.metadata.at("quantizers")).get<std::vector<std::string>>();
        for (NamedTensor& t : load_safetensors(kDir + "qdq_seqcls.expected.safetensors").tensors)
            r.expected[t.name] = t.tensor;
        for (NamedTensor& t : load_safetensors(kDir + "seqcls.expected.safetensors").tensors)
            r.fp32[t.name] = t.tensor;
        return r;
    }();
    return r;
}

std::unique_ptr<BertForSequenceClassification> make_model() {
    Rng init(1);
    auto model = std::make_unique<BertForSequenceClassification>(load_bert_config(kDir + "config.json"), init);
    model->eval();
    return model;
}

QuantizationConfig config(const nlohmann::json& j = nlohmann::json::object()) {
    return quantization_config_from_json(j, "run.json");
}

using KeyFilter = std::function<bool(const std::string&)>;

// The reference's tensors whose key passes `keep`, loaded; returns the report.
LoadReport load_reference(Module& model, const KeyFilter& keep = [](const std::string&) { return true; }) {
    NamedTensors chosen;
    for (const NamedTensor& t : reference().state)
        if (keep(t.name)) chosen.push_back(t);
    return load_state_dict(model, chosen, "qdq_seqcls.safetensors");
}

bool is_amax(const std::string& key) { return key.size() > 6 && key.compare(key.size() - 6, 6, "._amax") == 0; }

std::vector<std::string> sorted(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
}

std::vector<std::string> reference_names(const KeyFilter& keep) {
    std::vector<std::string> out;
    for (const std::string& n : reference().names)
        if (keep(n)) out.push_back(n);
    return sorted(out);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

float max_abs(const Tensor& t) {
    float m = 0;
    for (float v : t.to_vector()) m = std::max(m, std::fabs(v));
    return m;
}

Tensor logits_of(BertForSequenceClassification& model) {
    const auto& e = reference().expected;
    return model.forward({e.at("input_ids"), e.at("token_type_ids"), e.at("attention_mask")});
}

void expect_matches(const Tensor& actual, const Tensor& expected, const std::string& what) {
    expect_close(actual, expected, kRtol, 1e-5f * std::max(1.0f, max_abs(expected)), what.c_str());
}

// max |a - b| / max(1, max|b|): the error in the units the tolerance is stated in.
float scaled_error(const Tensor& a, const Tensor& b) {
    std::vector<float> x = a.to_vector(), y = b.to_vector();
    float m = 0;
    for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
    return m / std::max(1.0f, max_abs(b));
}

// The amax values of the quantizer `name`, none if the model has no such quantizer.
std::vector<float> amax_of(const Module& model, const std::string& name) {
    for (auto& [n, q] : model.named_quantizers())
        if (n == name) return q->amax.to_vector();
    ADD_FAILURE() << "no quantizer " << name;
    return {};
}

}  // namespace

TEST(QdqPlacement, AttachesExactlyQdqBertsQuantizers) {
    auto model = make_model();
    std::vector<std::string> names = attach_bert_quantizers(model->bert, config());
    ASSERT_EQ(reference().names.size(), 40u);  // per layer: 6 Linears × 2, 4 matmul, 4 residual
    // As sets: the order is per layer Linears, matmul, residual; QDQBERT's module order interleaves.
    EXPECT_EQ(sorted(names), sorted(reference().names));
    for (const auto& layer : model->bert.layers) {
        const BertSelfAttention& a = layer->self_attention;
        const Linear* linears[] = {&a.query, &a.key, &a.value, &layer->attention_output.dense, &layer->intermediate,
                                   &layer->output.dense};
        for (const Linear* l : linears) {
            ASSERT_TRUE(l->input_quantizer && l->weight_quantizer);
            // Roles are set at attach: the weight's quantizer holds that very weight.
            EXPECT_EQ(l->input_quantizer->role, QuantRole::Input);
            EXPECT_EQ(l->weight_quantizer->role, QuantRole::Weight);
            EXPECT_EQ(l->weight_quantizer->weight.f32(), l->weight.f32());
            EXPECT_NE(l->input_quantizer->amax.f32(), a.matmul_q_input_quantizer->amax.f32());  // each its own range
        }
        EXPECT_TRUE(a.matmul_q_input_quantizer && a.matmul_k_input_quantizer && a.matmul_v_input_quantizer &&
                    a.matmul_a_input_quantizer);
        for (const BertResidualOutput* o : {&layer->attention_output, &layer->output})
            EXPECT_TRUE(o->add_local_input_quantizer && o->add_residual_input_quantizer);
    }
    EXPECT_EQ(model->bert.pooler->dense.input_quantizer, nullptr);  // float in QDQBERT
    EXPECT_EQ(model->classifier.weight_quantizer, nullptr);
}

TEST(QdqPlacement, StateDictIsQdqBertsWithPqAmaxShapes) {
    auto model = make_model();
    attach_bert_quantizers(model->bert, config());
    std::map<std::string, Shape> ours, theirs;
    for (const NamedTensor& t : model->state_dict()) ours[t.name] = t.tensor.shape();
    for (const NamedTensor& t : reference().state) theirs[t.name] = t.tensor.shape();
    EXPECT_EQ(ours, theirs);  // keys and shapes: per tensor [], per row [out, 1]
    std::vector<std::string> buffers;
    for (const NamedTensor& b : model->named_buffers()) buffers.push_back(b.name);
    std::vector<std::string> amax_keys;
    for (const std::string& n : reference().names) amax_keys.push_back(n + "._amax");
    EXPECT_EQ(sorted(buffers), sorted(amax_keys));
    LoadReport report = load_reference(*model);
    EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << report.summary();
}

TEST(QdqPlacement, ForwardAndBackwardMatchQdqBertInPyTorch) {
    const auto& e = reference().expected;
    auto model = make_model();
    attach_bert_quantizers(model->bert, config());
    load_reference(*model);
    Tensor logits = logits_of(*model);
    Tensor loss = BertForSequenceClassification::loss(logits, e.at("labels"));
    expect_matches(logits, e.at("logits"), "logits");
    expect_matches(reshape(loss, {1}), e.at("loss"), "loss");
    // Quantization moves the logits far more than the tolerance: the comparison sees it.
    EXPECT_GT(scaled_error(logits, reference().fp32.at("logits")), 100 * kRtol);
    backward(loss);
    float worst = 0;
    for (const NamedTensor& p : model->named_parameters()) {
        ASSERT_TRUE(p.tensor.grad().defined()) << p.name << " received no gradient";
        expect_matches(p.tensor.grad(), e.at("grad." + p.name), "grad " + p.name);
        worst = std::max(worst, scaled_error(p.tensor.grad(), e.at("grad." + p.name)));
    }
    std::printf("max error / max(1, max|ref|): logits %.2g, loss %.2g, gradients %.2g\n",
                scaled_error(logits, e.at("logits")), scaled_error(reshape(loss, {1}), e.at("loss")), worst);
}

TEST(QdqPlacement, UncalibratedQuantizersRefuseToRun) {
    auto model = make_model();
    attach_bert_quantizers(model->bert, config());
    load_reference(*model, [](const std::string& k) { return !is_amax(k); });
    NoGradGuard no_grad;
    expect_error([&] { logits_of(*model); }, {"not calibrated"});
}

TEST(QdqPlacement, SetQuantModeReachesEveryQuantizer) {
    auto model = make_model();
    attach_bert_quantizers(model->bert, config());
    load_reference(*model);
    NoGradGuard no_grad;
    for (QuantMode mode : {QuantMode::Disabled, QuantMode::Calibrating}) {
        set_quant_mode(*model, mode);
        for (auto& [name, q] : model->named_quantizers()) EXPECT_EQ(q->mode, mode) << name;
        // Neither mode changes a tensor: the model is the float one of make_bert_reference.py.
        expect_matches(logits_of(*model), reference().fp32.at("logits"), quant_mode_name(mode));
    }
    set_quant_mode(*model, QuantMode::Quantizing);
    expect_matches(logits_of(*model), reference().expected.at("logits"), "quantizing");
}

TEST(QdqPlacement, DisableRegexesMatchFullNames) {
    auto model = make_model();
    auto names = attach_bert_quantizers(model->bert, config({{"disable", {"layer\\.0\\.", "_weight_quantizer$"}}}));
    EXPECT_EQ(sorted(names), reference_names([](const std::string& n) {
                  return contains(n, ".layer.1.") && !contains(n, "_weight_quantizer");
              }));
    const BertLayer& l0 = *model->bert.layers[0];
    const BertLayer& l1 = *model->bert.layers[1];
    EXPECT_EQ(l0.self_attention.query.input_quantizer, nullptr);
    EXPECT_EQ(l0.output.add_local_input_quantizer, nullptr);
    EXPECT_NE(l1.self_attention.query.input_quantizer, nullptr);
    EXPECT_EQ(l1.self_attention.query.weight_quantizer, nullptr);
    EXPECT_EQ(model->named_quantizers().size(), names.size());
}

TEST(QdqPlacement, DisableLayersDropsWholeLayers) {
    auto model = make_model();
    auto names = attach_bert_quantizers(model->bert, config({{"disable_layers", {0}}}));
    EXPECT_EQ(sorted(names), reference_names([](const std::string& n) { return contains(n, ".layer.1."); }));
    EXPECT_EQ(model->bert.layers[0]->self_attention.matmul_a_input_quantizer, nullptr);
    auto other = make_model();
    expect_error([&] { attach_bert_quantizers(other->bert, config({{"disable_layers", {2}}})); },
                 {"quantization.disable_layers", "layer 2", "2 layers"});
}

TEST(QdqPlacement, PerTensorWeightsHaveOneAmax) {
    auto per_row = make_model();
    attach_bert_quantizers(per_row->bert, config());
    const BertLayer& l = *per_row->bert.layers[0];
    EXPECT_EQ(l.self_attention.query.weight_quantizer->amax.shape(), (Shape{32, 1}));
    EXPECT_EQ(l.intermediate.weight_quantizer->amax.shape(), (Shape{37, 1}));
    EXPECT_EQ(l.output.dense.weight_quantizer->amax.shape(), (Shape{32, 1}));
    EXPECT_EQ(l.output.dense.input_quantizer->amax.shape(), Shape{});
    QuantizationConfig in_code = config();
    in_code.per_tensor_weights = true;  // the flag alone, with the per-row descriptor left in place
    for (const QuantizationConfig& c : {config({{"per_tensor_weights", true}}), in_code}) {
        auto model = make_model();
        attach_bert_quantizers(model->bert, c);
        for (auto& [name, q] : model->named_quantizers()) {
            EXPECT_EQ(q->amax.shape(), Shape{}) << name;
            EXPECT_FALSE(q->desc.axis) << name;
        }
    }
}

TEST(QdqPlacement, WithoutAttentionOrResidualQuantizers) {
    for (const char* key : {"quantize_attention", "quantize_residual"}) {
        const std::string dropped = key == std::string("quantize_attention") ? ".matmul_" : ".add_";
        auto model = make_model();
        auto names = attach_bert_quantizers(model->bert, config({{key, false}}));
        EXPECT_EQ(sorted(names), reference_names([&](const std::string& n) { return !contains(n, dropped); })) << key;
        for (const auto& layer : model->bert.layers) {
            EXPECT_EQ(layer->self_attention.matmul_v_input_quantizer == nullptr, dropped == ".matmul_");
            EXPECT_EQ(layer->output.add_residual_input_quantizer == nullptr, dropped == ".add_");
        }
        LoadReport report = load_reference(*model);
        EXPECT_EQ(report.unexpected.size(), 8u) << report.summary();  // 2 layers × 4 dropped amax
        EXPECT_TRUE(report.missing.empty()) << report.summary();
        NoGradGuard no_grad;
        Tensor logits = logits_of(*model);  // runs without them, and they mattered
        EXPECT_GT(scaled_error(logits, reference().expected.at("logits")), 10 * kRtol) << key;
    }
}

TEST(QdqPlacement, FuseQkvSharesTheLargestOutputRange) {
    for (bool per_tensor : {false, true}) {
        auto model = make_model();
        QuantizationConfig c = config({{"fuse_qkv", true}, {"per_tensor_weights", per_tensor}});
        attach_bert_quantizers(model->bert, c);
        load_reference(*model, [](const std::string& k) { return !contains(k, "_weight_quantizer"); });
        // Distinct per-tensor weight ranges to fuse (the reference's are per row).
        float w = 0.25f;
        for (auto& [name, q] : model->named_quantizers()) {
            if (!contains(name, "_weight_quantizer")) continue;
            if (per_tensor) q->amax.f32()[0] = w += 0.125f;
            else std::fill_n(q->amax.f32(), q->amax.numel(), 1.0f);
        }
        std::map<std::string, std::vector<float>> before;
        for (auto& [name, q] : model->named_quantizers()) before[name] = q->amax.to_vector();
        apply_range_options(model->bert, c);
        for (int i = 0; i < 2; ++i) {
            const std::string self = "bert.encoder.layer." + std::to_string(i) + ".attention.self.";
            auto fused = [&](const std::vector<std::string>& group) {
                float m = 0;
                for (const std::string& n : group) m = std::max(m, before.at(self + n).at(0));
                return m;
            };
            std::vector<std::vector<std::string>> groups = {{"matmul_q_input_quantizer", "matmul_k_input_quantizer",
                                                             "matmul_v_input_quantizer"}};
            if (per_tensor) groups.push_back({"query._weight_quantizer", "key._weight_quantizer", "value._weight_quantizer"});
            for (const auto& group : groups) {
                EXPECT_NE(before[self + group[0]], before[self + group[1]]);  // there was something to fuse
                const std::vector<float> largest = {fused(group)};
                for (const std::string& n : group) EXPECT_EQ(amax_of(*model, self + n), largest) << self + n;
                for (const std::string& n : group) before.erase(self + n);
            }
        }
        for (auto& [name, values] : before)  // everything else, the Q/K/V Linear inputs included
            EXPECT_EQ(amax_of(*model, name), values) << name;
    }
}

TEST(QdqPlacement, ClipGeluCapsOnlyTheInputOfOutputDense) {
    for (float clip : {1.5f, 100.0f}) {
        auto model = make_model();
        QuantizationConfig c = config({{"clip_gelu", clip}});
        attach_bert_quantizers(model->bert, c);
        load_reference(*model);
        std::map<std::string, std::vector<float>> old;
        for (auto& [name, q] : model->named_quantizers()) old[name] = q->amax.to_vector();
        apply_range_options(model->bert, c);
        for (auto& [name, q] : model->named_quantizers()) {
            bool gelu_out = contains(name, ".output.dense._input_quantizer") && !contains(name, "attention.");
            std::vector<float> want = old[name];
            if (gelu_out) want[0] = std::min(want[0], clip);
            EXPECT_EQ(q->amax.to_vector(), want) << name;
            if (gelu_out && clip < 2) {
                EXPECT_EQ(want[0], clip) << "the reference's are above 1.5";
            }
        }
    }
}

TEST(QdqPlacement, CalibrateWeightsTakesEachRowsMaxAbs) {
    for (bool per_tensor : {false, true}) {
        auto model = make_model();
        attach_bert_quantizers(model->bert, config({{"per_tensor_weights", per_tensor}}));
        load_reference(*model, [](const std::string& k) { return !is_amax(k); });
        calibrate_weights(*model);
        std::map<std::string, Tensor> ref;
        for (const NamedTensor& t : reference().state) ref[t.name] = t.tensor;
        for (auto& [name, q] : model->named_quantizers()) {
            std::vector<float> amax = q->amax.to_vector();
            if (!contains(name, "_weight_quantizer")) {
                EXPECT_TRUE(std::isnan(amax[0])) << name << ": activations are not weights";
                continue;
            }
            const std::string module = name.substr(0, name.size() - std::string("._weight_quantizer").size());
            const Tensor& w = ref[module + ".weight"];
            int64_t rows = w.size(0), cols = w.size(1);
            std::vector<float> row_max((size_t)rows, 0.0f);
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t k = 0; k < cols; ++k)
                    row_max[(size_t)r] = std::max(row_max[(size_t)r], std::fabs(w.f32()[r * cols + k]));
            if (per_tensor) {
                EXPECT_EQ(amax, std::vector<float>{*std::max_element(row_max.begin(), row_max.end())}) << name;
                continue;
            }
            EXPECT_EQ(amax, row_max) << name;
            // The reference's amax are PQ's per-row max, 0.9 of it for key and intermediate.dense.
            bool scaled = contains(name, ".key.") || contains(name, ".intermediate.");
            for (float& a : row_max) a = scaled ? a * 0.9f : a;
            EXPECT_EQ(ref[name + "._amax"].to_vector(), row_max) << name;
        }
    }
}
