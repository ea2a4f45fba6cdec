// A fake-quantization fixture case's "params" (num_bits, unsigned, narrow_range, axis), as
// make_quant.py and make_lsq.py write them, read into QuantParams.
#pragma once

#include <nlohmann/json.hpp>

#include "quant/fake_quant.h"

namespace qdq::testing {

inline QuantParams fixture_quant_params(const nlohmann::json& case_json) {
    const nlohmann::json& p = case_json.at("params");
    QuantParams params{.num_bits = p.at("num_bits").get<int>(),
                       .unsigned_ = p.at("unsigned").get<bool>(),
                       .narrow_range = p.at("narrow_range").get<bool>()};
    if (!p.at("axis").is_null()) params.axis = p.at("axis").get<int64_t>();
    return params;
}

}  // namespace qdq::testing
