#include "trainers/qat_variant.h"

#include <cstring>
#include <stdexcept>

namespace qdq {

namespace {

bool folder_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char ch : name)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) return false;
    return true;
}

// Why a variant may not set `key`, or "" when it may. A variant changes how QAT trains from
// the shared calibration; what the shared stages were, and what the pipeline sets itself, stay.
std::string refusal(const std::string& key) {
    auto under = [&](const char* section) { return key.rfind(section, 0) == 0 && key.size() > std::strlen(section); };
    if (key == "training.output_dir") return "the pipeline places each variant's stage (qat_<name>/)";
    if (key == "training.learning_rate" || key == "training.num_train_epochs" || key == "training.max_steps")
        return "QAT's rate and length are pipeline.qat_learning_rate_ratio and pipeline.qat_num_train_epochs: set those";
    if (key == "training.bf16") return "every row of a table runs its products in one precision";
    if (under("training.") || under("distillation.")) return "";
    if (key == "pipeline.qat_learning_rate_ratio" || key == "pipeline.qat_num_train_epochs") return "";
    if (key == "quantization.recalibrate_weights") return "";
    for (const char* descriptor : {"quantization.input.", "quantization.weight."})
        for (const char* setting : {"num_bits", "learn_amax", "learn_step_size"})
            if (key == std::string(descriptor) + setting) return "";
    if (under("quantization."))
        return "the variants share the calibrated quantizers: of quantization, a variant sets input and weight "
               "num_bits, learn_amax and learn_step_size, and recalibrate_weights";
    return "a variant sets training, distillation, quantization (the learned-range and width keys) or "
           "pipeline.qat_* keys only (the FP32 model and the calibration are shared)";
}

bool variant_sets(const QatVariant& variant, const std::string& prefix) {
    for (const auto& [key, value] : variant.settings.items())
        if (key.rfind(prefix, 0) == 0) return true;
    return false;
}

}  // namespace

std::vector<QatVariant> parse_qat_variants(const nlohmann::json& section, const std::string& source) {
    const std::string where = source + ": pipeline.qat_variants";
    if (!section.is_object())
        throw std::runtime_error(where + " must be an object of variant name -> {\"dotted.key\": value}");
    std::vector<QatVariant> variants;
    for (const auto& [name, settings] : section.items()) {
        if (!folder_name(name))
            throw std::runtime_error(where + ": '" + name + "' is not a usable name (lower-case letters, digits, _ and -)");
        if (!settings.is_object())
            throw std::runtime_error(where + "." + name + " must be an object of \"dotted.key\": value");
        for (const auto& [key, value] : settings.items())
            if (const std::string why = refusal(key); !why.empty())
                throw std::runtime_error(where + "." + name + ": '" + key + "': " + why);
        variants.push_back({name, settings});
    }
    return variants;
}

nlohmann::json qat_variants_to_json(const std::vector<QatVariant>& variants) {
    nlohmann::json j = nlohmann::json::object();
    for (const QatVariant& v : variants) j[v.name] = v.settings;
    return j;
}

RunConfig qat_variant_config(const RunConfig& config, const QatVariant& variant) {
    const std::string what = config.source + ": pipeline.qat_variants." + variant.name;
    // The sections a variant may set (refusal() above), as the run has them: every key written
    // out, so that a variant setting quantization.input.learn_step_size changes that key and not
    // the input's other settings.
    nlohmann::json sections = {{"training", training_settings_to_json(config.training)},
                               {"pipeline", pipeline_settings_to_json(config.pipeline)},
                               {"distillation", config.distillation ? distillation_settings_to_json(*config.distillation)
                                                                    : nlohmann::json::object()}};
    if (config.quantization) sections["quantization"] = quantization_config_to_json(*config.quantization);
    sections["pipeline"].erase("qat_variants");
    for (const auto& [key, value] : variant.settings.items()) set_config_key(sections, key, value, what);

    RunConfig out = config;
    out.source = what;
    out.training = training_settings_from_json(sections["training"], what);
    out.pipeline = pipeline_settings_from_json(sections["pipeline"], what);
    if (sections.contains("quantization")) out.quantization = quantization_config_from_json(sections["quantization"], what);
    if (config.distillation || variant_sets(variant, "distillation.")) {
        out.distillation = distillation_settings_from_json(sections["distillation"], what);
        // A teacher the variant names is relative to the config file that is run.
        if (!config.distillation || out.distillation->teacher != config.distillation->teacher)
            resolve_teacher(*out.distillation, config.base_dir, what);
    }
    return out;
}

}  // namespace qdq
