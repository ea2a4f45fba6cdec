#include "trainers/qat_variant.h"

#include <stdexcept>

namespace qdq {

namespace {

bool folder_name(const std::string& name) {
    if (name.empty() || name.size() > 64) return false;
    for (char ch : name)
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) return false;
    return true;
}

// The sections a variant may set: how QAT trains, never what the shared stages were.
bool variant_key(const std::string& key) {
    for (const char* section : {"training.", "quantization.", "distillation."})
        if (key.rfind(section, 0) == 0 && key.size() > std::string(section).size()) return true;
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
            if (!variant_key(key))
                throw std::runtime_error(where + "." + name + ": '" + key +
                                         "': a variant sets training, quantization or distillation keys only "
                                         "(the FP32 model and the calibration are shared)");
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
    nlohmann::json raw = config.raw;
    if (raw.contains("pipeline") && raw["pipeline"].is_object()) raw["pipeline"].erase("qat_variants");
    // The quantization section as resolved, every descriptor key written out: a variant that
    // sets quantization.input.learn_step_size changes that key, not the input's other defaults.
    if (config.quantization) raw["quantization"] = quantization_config_to_json(*config.quantization);
    for (const auto& [key, value] : variant.settings.items()) set_config_key(raw, key, value, what);
    return parse_run_config(raw, what, config.base_dir);
}

}  // namespace qdq
