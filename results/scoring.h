// How a run's framework rows were scored: the arithmetic of evaluation that has changed as the
// framework came closer to what the exported INT8 graph computes. A pipeline record
// (results.json) keeps the scoring of the build that wrote it, so that a report rebuilt later
// from an older record (`qdqtrain sweep --results`) says what that record measured rather than
// what today's build would. Records written before it was kept have none.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "json/json_fields.h"

namespace qdq {

// A matrix product of two quantized operands in a quantized model's evaluation.
enum class QuantizedProducts {
    dequantized_floats,  // pytorch-quantization's: the fake-quantized operands multiplied in float32
    integer_codes,       // the codes multiplied and summed exactly, scaled once (quant/integer_product.h)
};

// LayerNorm's forward pass, in every row.
enum class LayerNormForward {
    float_sums,  // mean and variance summed in float32, as wide as the CPU's vectors
    exact,       // in double, each output the exact value rounded once (autograd/ops/layernorm.cpp)
};

struct Scoring {
    QuantizedProducts quantized_products{QuantizedProducts::integer_codes};
    LayerNormForward layer_norm{LayerNormForward::exact};
    bool operator==(const Scoring&) const = default;
};

// The scoring of this build: a change to either arithmetic above changes it too.
Scoring current_scoring();

nlohmann::json scoring_to_json(const Scoring& scoring);
// The object `f` reads at `key`, or none when the record has no such key.
std::optional<Scoring> optional_scoring(JsonFields& f, const char* key);

}  // namespace qdq
