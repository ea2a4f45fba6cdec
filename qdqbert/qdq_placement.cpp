#include "qdqbert/qdq_placement.h"

#include <algorithm>
#include <regex>
#include <set>
#include <stdexcept>

#include "json/json_fields.h"
#include "nn/bert_quantizers.h"
#include "quant/calibrators.h"

namespace qdq {

namespace {

namespace sites = nn::quantizer_sites;

struct LinearSite {
    std::string name;  // full module name, e.g. bert.encoder.layer.0.attention.self.query
    nn::Linear* linear;
};

// The six Linears of an encoder layer, in the order of nn/bert_quantizers.h's kLinears.
std::vector<LinearSite> encoder_linears(nn::BertModel& bert, int layer_index) {
    nn::BertLayer& layer = *bert.layers[(size_t)layer_index];
    const std::string base = "bert.encoder.layer." + std::to_string(layer_index) + ".";
    nn::Linear* linears[] = {&layer.self_attention.query,   &layer.self_attention.key, &layer.self_attention.value,
                             &layer.attention_output.dense, &layer.intermediate,       &layer.output.dense};
    std::vector<LinearSite> sites;
    for (size_t i = 0; i < std::size(linears); ++i) sites.push_back({base + sites::kLinears[i], linears[i]});
    return sites;
}

// The amax of a per-channel weight quantizer: PQ's keepdims shape, one per output row.
Shape weight_amax_shape(const nn::Linear& linear, const QuantDescriptor& desc) {
    if (!desc.axis) return {};
    Shape shape(2, 1);
    shape[(size_t)(*desc.axis < 0 ? *desc.axis + 2 : *desc.axis)] = linear.weight.size(*desc.axis);
    return shape;
}

void write_amax(TensorQuantizer& q, float value) { q.amax.copy_from(full(q.amax.shape(), value)); }

// The largest of three single ranges, given to all three; per-channel or missing ones are left.
void share_largest_range(TensorQuantizer* a, TensorQuantizer* b, TensorQuantizer* c) {
    for (TensorQuantizer* q : {a, b, c})
        if (!q || q->amax.numel() != 1) return;
    float m = std::max({a->amax.item(), b->amax.item(), c->amax.item()});
    for (TensorQuantizer* q : {a, b, c}) write_amax(*q, m);
}

}  // namespace

QuantizationConfig quantization_config_from_json(const nlohmann::json& j, const std::string& source) {
    JsonFields f(j, "quantization", source);
    QuantizationConfig c;
    // A descriptor given in part keeps QDQBERT's defaults for the rest: {"weight": {"num_bits": 4}}
    // stays per channel, {"input": {"num_bits": 4}} keeps its histogram.
    if (f.has("input")) c.input = quant_descriptor_from_json(f.section("input"), source, "quantization.input", c.input);
    if (f.has("weight"))
        c.weight = quant_descriptor_from_json(f.section("weight"), source, "quantization.weight", c.weight);
    f.read("per_tensor_weights", c.per_tensor_weights);
    if (c.per_tensor_weights) c.weight.axis.reset();
    f.read("quantize_attention", c.quantize_attention);
    f.read("quantize_residual", c.quantize_residual);
    if (f.has("disable") && !j.at("disable").is_array()) f.fail("disable", "must be a list of regular expressions");
    f.read("disable", c.disable);
    for (const std::string& pattern : c.disable) {
        try {
            std::regex check(pattern);
        } catch (const std::regex_error& e) {
            f.fail("disable", "holds an invalid regular expression '" + pattern + "': " + e.what());
        }
    }
    f.read("disable_layers", c.disable_layers);
    for (int layer : c.disable_layers)
        if (layer < 0) f.fail("disable_layers", "holds a negative layer index " + std::to_string(layer));
    f.read_choice("calibrator", c.calibrator.method, kAmaxMethodNames);
    f.read("percentile", c.calibrator.percentile);
    if (!(c.calibrator.percentile > 0 && c.calibrator.percentile <= 100)) f.fail("percentile", "must be in (0, 100]");
    f.read("calibration_examples", c.calibration_examples);
    if (c.calibration_examples <= 0) f.fail("calibration_examples", "must be positive");
    f.read("fuse_qkv", c.fuse_qkv);
    nlohmann::json clip_gelu;
    f.read("clip_gelu", clip_gelu);
    if (!clip_gelu.is_null()) {
        if (!clip_gelu.is_number() || !(clip_gelu.get<double>() > 0)) f.fail("clip_gelu", "must be a positive number or null");
        c.clip_gelu = clip_gelu.get<float>();
    }
    f.read("recalibrate_weights", c.recalibrate_weights);
    f.finish();
    if (c.input.axis) f.fail("input", "must be per tensor (no axis): activations have one range");
    if (c.calibrator.method != AmaxMethod::Max && c.input.calib_method != CalibMethod::Histogram)
        f.fail("calibrator", std::string("'") + amax_method_name(c.calibrator.method) + "' needs input.calib_method histogram");
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
                        {"calibrator", amax_method_name(c.calibrator.method)},
                        {"percentile", c.calibrator.percentile},
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
    // Attaches `quantizer` to `owner` as `name` unless the config disables it; returns it or null.
    auto attach = [&](nn::Module& owner, const std::string& owner_name, const std::string& name,
                      TensorQuantizer quantizer) -> TensorQuantizer* {
        const std::string full = owner_name + "." + name;
        for (const std::regex& r : disabled)
            if (std::regex_search(full, r)) return nullptr;
        attached.push_back(full);
        return owner.attach_quantizer(name, std::move(quantizer));
    };
    // A new quantizer each time: a copy would share its amax tensor.
    const auto input = [&] { return TensorQuantizer(c.input); };
    for (int i = 0; i < (int)bert.layers.size(); ++i) {
        if (skip_layers.count(i)) continue;
        for (LinearSite& site : encoder_linears(bert, i)) {
            nn::Linear& l = *site.linear;
            l.input_quantizer = attach(l, site.name, sites::kLinearInput, input());
            l.weight_quantizer = attach(l, site.name, sites::kLinearWeight,
                                        TensorQuantizer::for_weight(weight, l.weight, weight_amax_shape(l, weight)));
        }
        nn::BertLayer& layer = *bert.layers[(size_t)i];
        const std::string base = "bert.encoder.layer." + std::to_string(i) + ".";
        if (c.quantize_attention) {
            nn::BertSelfAttention& a = layer.self_attention;
            const std::string name = base + sites::kAttention;
            a.matmul_q_input_quantizer = attach(a, name, sites::kMatmulQ, input());
            a.matmul_k_input_quantizer = attach(a, name, sites::kMatmulK, input());
            a.matmul_v_input_quantizer = attach(a, name, sites::kMatmulV, input());
            a.matmul_a_input_quantizer = attach(a, name, sites::kMatmulA, input());
        }
        if (c.quantize_residual) {
            for (auto [out, name] : {std::pair{&layer.attention_output, base + sites::kResidualOutputs[0]},
                                     std::pair{&layer.output, base + sites::kResidualOutputs[1]}}) {
                out->add_local_input_quantizer = attach(*out, name, sites::kAddLocal, input());
                out->add_residual_input_quantizer = attach(*out, name, sites::kAddResidual, input());
            }
        }
    }
    return attached;
}

void set_quant_mode(const nn::Module& model, QuantMode mode) {
    for (auto& [name, q] : model.named_quantizers()) q->mode = mode;
}

void calibrate_weights(const nn::Module& model) {
    for (auto& [name, quantizer] : model.named_quantizers()) {
        TensorQuantizer& q = *quantizer;
        if (q.role != QuantRole::Weight) continue;
        MaxCalibrator calib{q.desc.axis, {}};
        collect(calib, q.weight);
        q.amax.copy_from(from_vector(q.amax.shape(), compute_amax(calib)));
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
