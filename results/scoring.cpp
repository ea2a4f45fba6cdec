#include "results/scoring.h"

namespace qdq {

namespace {

constexpr std::pair<const char*, QuantizedProducts> kQuantizedProducts[] = {
    {"dequantized_floats", QuantizedProducts::dequantized_floats},
    {"integer_codes", QuantizedProducts::integer_codes},
};
constexpr std::pair<const char*, LayerNormForward> kLayerNormForwards[] = {
    {"float_sums", LayerNormForward::float_sums},
    {"exact", LayerNormForward::exact},
};

}  // namespace

Scoring current_scoring() { return {QuantizedProducts::integer_codes, LayerNormForward::exact}; }

nlohmann::json scoring_to_json(const Scoring& scoring) {
    return {{"quantized_products", name_of_choice(scoring.quantized_products, kQuantizedProducts)},
            {"layer_norm", name_of_choice(scoring.layer_norm, kLayerNormForwards)}};
}

std::optional<Scoring> optional_scoring(JsonFields& f, const char* key) {
    if (!f.has(key)) return std::nullopt;
    JsonFields s(f.section(key), f.path_of(key), f.source());
    Scoring scoring;
    for (const char* field : {"quantized_products", "layer_norm"})
        if (!s.has(field)) s.fail(field, "is missing");
    s.read_choice("quantized_products", scoring.quantized_products, kQuantizedProducts);
    s.read_choice("layer_norm", scoring.layer_norm, kLayerNormForwards);
    s.finish();
    return scoring;
}

}  // namespace qdq
