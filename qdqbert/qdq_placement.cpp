#include "qdqbert/qdq_placement.h"

#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>

#include "quant/calibrators.h"

namespace qdq {

namespace {

const char* kKeys[] = {"input", "weight", "per_tensor_weights", "quantize_attention", "quantize_residual",
                       "disable", "disable_layers", "calibrator", "percentile", "calibration_examples",
                       "fuse_qkv", "clip_gelu", "recalibrate_weights"};

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& what) {
    throw std::runtime_error(source + ": 'quantization." + key + "' " + what);
}

template <typename T>
void read(const nlohmann::json& j, const char* key, T& out, const std::string& source, bool (nlohmann::json::*is)() const,
          const char* type) {
    if (!j.contains(key)) return;
    if (!(j[key].*is)()) fail(source, key, std::string("must be ") + type + ", got " + j[key].dump());
    out = j[key].get<T>();
}

// Each element is checked first: get<std::vector<int>> turns 1.5 into 1, and a string among
// integers throws a json type_error that names no key.
template <typename T>
void read_list(const nlohmann::json& j, const char* key, std::vector<T>& out, const std::string& source,
               bool (nlohmann::json::*is)() const, const char* type) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j[key];
    if (!v.is_array() || !std::all_of(v.begin(), v.end(), [&](const nlohmann::json& e) { return (e.*is)(); }))
        fail(source, key, std::string("must be ") + type + ", got " + v.dump());
    out = v.get<std::vector<T>>();
}

struct LinearSite {
    std::string name;  // full module name, e.g. bert.encoder.layer.0.attention.self.query
    nn::Linear* linear;
};

std::vector<LinearSite> encoder_linears(nn::BertModel& bert, int layer_index) {
    nn::BertLayer& layer = *bert.layers[(size_t)layer_index];
    const std::string base = "bert.encoder.layer." + std::to_string(layer_index) + ".";
    return {{base + "attention.self.query", &layer.self_attention.query},
            {base + "attention.self.key", &layer.self_attention.key},
            {base + "attention.self.value", &layer.self_attention.value},
            {base + "attention.output.dense", &layer.attention_output.dense},
            {base + "intermediate.dense", &layer.intermediate},
            {base + "output.dense", &layer.output.dense}};
}

// The amax of a per-channel weight quantizer: PQ's keepdims shape, one per output row.
Shape weight_amax_shape(const nn::Linear& linear, const QuantDescriptor& desc) {
    if (!desc.axis) return {};
    Shape shape(2, 1);
    shape[(size_t)(*desc.axis < 0 ? *desc.axis + 2 : *desc.axis)] = linear.weight.size(*desc.axis);
    return shape;
}

void write_amax(TensorQuantizer& q, float value) {
    float* a = q.amax.f32();
    for (int64_t i = 0; i < q.amax.numel(); ++i) a[i] = value;
}

// The largest of three single ranges, given to all three; per-channel or missing ones are left.
void share_largest_range(TensorQuantizer* a, TensorQuantizer* b, TensorQuantizer* c) {
    for (TensorQuantizer* q : {a, b, c})
        if (!q || q->amax.numel() != 1) return;
    float m = std::max({a->amax.item(), b->amax.item(), c->amax.item()});
    for (TensorQuantizer* q : {a, b, c}) write_amax(*q, m);
}

}  // namespace

QuantizationConfig quantization_config_from_json(const nlohmann::json& j, const std::string& source) {
    if (!j.is_object()) throw std::runtime_error(source + ": 'quantization' must be an object");
    for (const auto& [key, value] : j.items())
        if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return key == k; }) == std::end(kKeys))
            fail(source, key, "is not a known key");
    QuantizationConfig c;
    auto descriptor = [&](const char* key, QuantDescriptor& out) {
        if (!j.contains(key)) return;
        try {
            from_json(j[key], out);
        } catch (const std::exception& e) {
            fail(source, key, e.what());
        }
    };
    descriptor("input", c.input);
    descriptor("weight", c.weight);
    read(j, "per_tensor_weights", c.per_tensor_weights, source, &nlohmann::json::is_boolean, "true or false");
    if (c.per_tensor_weights) c.weight.axis.reset();
    read(j, "quantize_attention", c.quantize_attention, source, &nlohmann::json::is_boolean, "true or false");
    read(j, "quantize_residual", c.quantize_residual, source, &nlohmann::json::is_boolean, "true or false");
    read_list(j, "disable", c.disable, source, &nlohmann::json::is_string, "a list of regular expressions");
    for (const std::string& pattern : c.disable) {
        try {
            std::regex check(pattern);
        } catch (const std::regex_error& e) {
            fail(source, "disable", "holds an invalid regular expression '" + pattern + "': " + e.what());
        }
    }
    read_list(j, "disable_layers", c.disable_layers, source, &nlohmann::json::is_number_integer,
              "a list of layer indices");
    for (int layer : c.disable_layers)
        if (layer < 0) fail(source, "disable_layers", "holds a negative layer index " + std::to_string(layer));
    if (j.contains("calibrator")) {
        if (!j["calibrator"].is_string()) fail(source, "calibrator", "must be a string");
        c.calibrator = amax_method_from_name(j["calibrator"], source + ": 'quantization.calibrator'");
    }
    read(j, "percentile", c.percentile, source, &nlohmann::json::is_number, "a number");
    if (!(c.percentile > 0 && c.percentile <= 100)) fail(source, "percentile", "must be in (0, 100]");
    read(j, "calibration_examples", c.calibration_examples, source, &nlohmann::json::is_number_integer, "an integer");
    if (c.calibration_examples <= 0) fail(source, "calibration_examples", "must be positive");
    read(j, "fuse_qkv", c.fuse_qkv, source, &nlohmann::json::is_boolean, "true or false");
    if (j.contains("clip_gelu") && !j["clip_gelu"].is_null()) {
        if (!j["clip_gelu"].is_number() || !(j["clip_gelu"].get<double>() > 0))
            fail(source, "clip_gelu", "must be a positive number or null");
        c.clip_gelu = j["clip_gelu"].get<float>();
    }
    read(j, "recalibrate_weights", c.recalibrate_weights, source, &nlohmann::json::is_boolean, "true or false");
    if (c.input.axis) fail(source, "input", "must be per tensor (no axis): activations have one range");
    if (c.calibrator != AmaxMethod::Max && c.input.calib_method != CalibMethod::Histogram)
        fail(source, "calibrator", std::string("'") + amax_method_name(c.calibrator) +
                                       "' needs input.calib_method histogram");
    return c;
}

nlohmann::json quantization_config_to_json(const QuantizationConfig& c) {
    nlohmann::json j = {{"input", c.input},
                        {"weight", c.weight},
                        {"per_tensor_weights", c.per_tensor_weights},
                        {"quantize_attention", c.quantize_attention},
                        {"quantize_residual", c.quantize_residual},
                        {"disable", c.disable},
                        {"disable_layers", c.disable_layers},
                        {"calibrator", amax_method_name(c.calibrator)},
                        {"percentile", c.percentile},
                        {"calibration_examples", c.calibration_examples},
                        {"fuse_qkv", c.fuse_qkv},
                        {"recalibrate_weights", c.recalibrate_weights}};
    j["clip_gelu"] = c.clip_gelu ? nlohmann::json(*c.clip_gelu) : nlohmann::json();
    return j;
}

std::vector<std::string> attach_bert_quantizers(nn::BertModel& bert, const QuantizationConfig& c) {
    std::vector<std::regex> disabled;
    for (const std::string& pattern : c.disable) disabled.emplace_back(pattern);
    const std::set<int> skip_layers(c.disable_layers.begin(), c.disable_layers.end());
    for (int layer : skip_layers)
        check(layer >= 0 && layer < (int)bert.layers.size(),
              "'quantization.disable_layers' holds layer " + std::to_string(layer) + ", the model has " +
                  std::to_string(bert.layers.size()) + " layers");
    // per_tensor_weights is a flag of its own for configs built in code, not only from JSON.
    QuantDescriptor weight = c.weight;
    if (c.per_tensor_weights) weight.axis.reset();
    std::vector<std::string> attached;
    // Attaches `name` to `owner` unless the config disables it; returns the quantizer or null.
    auto attach = [&](nn::Module& owner, const std::string& owner_name, const std::string& name,
                      const QuantDescriptor& desc, const Shape& amax_shape) -> TensorQuantizer* {
        const std::string full = owner_name + "." + name;
        for (const std::regex& r : disabled)
            if (std::regex_search(full, r)) return nullptr;
        attached.push_back(full);
        return owner.attach_quantizer(name, TensorQuantizer(desc, amax_shape));
    };
    for (int i = 0; i < (int)bert.layers.size(); ++i) {
        if (skip_layers.count(i)) continue;
        for (LinearSite& site : encoder_linears(bert, i)) {
            nn::Linear& l = *site.linear;
            l.input_quantizer = attach(l, site.name, "_input_quantizer", c.input, {});
            l.weight_quantizer = attach(l, site.name, "_weight_quantizer", weight, weight_amax_shape(l, weight));
        }
        nn::BertLayer& layer = *bert.layers[(size_t)i];
        const std::string base = "bert.encoder.layer." + std::to_string(i) + ".";
        if (c.quantize_attention) {
            nn::BertSelfAttention& a = layer.self_attention;
            const std::string name = base + "attention.self";
            a.matmul_q_input_quantizer = attach(a, name, "matmul_q_input_quantizer", c.input, {});
            a.matmul_k_input_quantizer = attach(a, name, "matmul_k_input_quantizer", c.input, {});
            a.matmul_v_input_quantizer = attach(a, name, "matmul_v_input_quantizer", c.input, {});
            a.matmul_a_input_quantizer = attach(a, name, "matmul_a_input_quantizer", c.input, {});
        }
        if (c.quantize_residual) {
            for (auto [out, name] : {std::pair{&layer.attention_output, base + "attention.output"},
                                     std::pair{&layer.output, base + "output"}}) {
                out->add_local_input_quantizer = attach(*out, name, "add_local_input_quantizer", c.input, {});
                out->add_residual_input_quantizer = attach(*out, name, "add_residual_input_quantizer", c.input, {});
            }
        }
    }
    return attached;
}

void set_quant_mode(const nn::Module& model, QuantMode mode) {
    for (auto& [name, q] : model.named_quantizers()) q->mode = mode;
}

void calibrate_weights(const nn::Module& model) {
    // Weights are the only quantized operands that are module state: each weight quantizer's
    // module is a Linear.
    std::vector<const nn::Module*> stack = {&model};
    while (!stack.empty()) {
        const nn::Module* m = stack.back();
        stack.pop_back();
        for (const auto& [name, child] : m->children()) stack.push_back(child);
        const auto* linear = dynamic_cast<const nn::Linear*>(m);
        if (!linear || !linear->weight_quantizer) continue;
        TensorQuantizer& q = *linear->weight_quantizer;
        MaxCalibrator calib{q.desc.axis, {}};
        collect(calib, linear->weight);
        std::vector<float> amax = compute_amax(calib);
        std::copy(amax.begin(), amax.end(), q.amax.f32());
    }
}

void apply_range_options(nn::BertModel& bert, const QuantizationConfig& c) {
    for (auto& layer : bert.layers) {
        nn::BertSelfAttention& a = layer->self_attention;
        if (c.fuse_qkv) {
            // HFQ's fuse_qkv: one GEMM can compute Q, K and V when their outputs share one scale
            // (the inputs of Q·Kᵀ and probs·V) and, with per-tensor weights, so do the weights.
            // The three Linear inputs need nothing: they are one tensor, calibrated alike.
            share_largest_range(a.matmul_q_input_quantizer, a.matmul_k_input_quantizer, a.matmul_v_input_quantizer);
            share_largest_range(a.query.weight_quantizer, a.key.weight_quantizer, a.value.weight_quantizer);
        }
        TensorQuantizer* gelu_out = layer->output.dense.input_quantizer;
        if (c.clip_gelu && gelu_out && gelu_out->amax.item() > *c.clip_gelu) write_amax(*gelu_out, *c.clip_gelu);
    }
}

}  // namespace qdq
