#include "quant/quant_descriptor.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace qdq {

namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("quant descriptor: " + what);
}

[[noreturn]] void fail_key(const std::string& key, const std::string& what,
                           const nlohmann::json& got) {
    fail("'" + key + "' " + what + ", got " + got.dump());
}

// The project's strict reader (trainers/json_fields.h) lives in qdq_trainers, which links this
// library; these few checks keep quant free of that cycle.
bool read_bool(const nlohmann::json& j, const std::string& key) {
    if (!j.is_boolean()) fail_key(key, "must be true or false", j);
    return j.get<bool>();
}

float read_amax_value(const nlohmann::json& j) {
    if (!j.is_number()) fail_key("amax", "must hold numbers", j);
    return j.get<float>();
}

}  // namespace

QuantDescriptor linear_weight_descriptor() {
    QuantDescriptor desc;
    desc.axis = 0;
    return desc;
}

const char* calib_method_name(CalibMethod method) {
    return method == CalibMethod::Max ? "max" : "histogram";
}

void validate(const QuantDescriptor& d) {
    if (d.num_bits < 2 || d.num_bits > 16)
        fail("num_bits must be in [2, 16], got " + std::to_string(d.num_bits));
    if (d.amax) {
        if (d.amax->empty()) fail("amax must hold at least one value");
        for (float a : *d.amax)
            if (!std::isfinite(a) || a < 0) fail("amax values must be finite and >= 0, got " + std::to_string(a));
        if (!d.axis && d.amax->size() != 1) fail("a per-tensor amax is one value");
    }
    if (d.learn_amax && d.axis) fail("learn_amax is per tensor only: axis must be null");
    if (d.calib_method == CalibMethod::Histogram && d.axis)
        fail("histogram calibration is per tensor only: axis must be null");
}

void from_json(const nlohmann::json& j, QuantDescriptor& desc) {
    if (!j.is_object()) fail("expected a JSON object, got " + j.dump());
    QuantDescriptor d;
    for (const auto& [key, v] : j.items()) {
        if (key == "num_bits") {
            if (!v.is_number_integer()) fail_key(key, "must be an integer", v);
            int64_t bits = v.get<int64_t>();
            if (bits < 2 || bits > 16) fail_key(key, "must be in [2, 16]", v);
            d.num_bits = (int)bits;
        } else if (key == "axis") {
            if (!v.is_null() && !v.is_number_integer()) fail_key(key, "must be an integer or null", v);
            if (v.is_null()) d.axis.reset();
            else d.axis = v.get<int64_t>();
        } else if (key == "unsigned") {
            d.unsigned_ = read_bool(v, key);
        } else if (key == "narrow_range") {
            d.narrow_range = read_bool(v, key);
        } else if (key == "learn_amax") {
            d.learn_amax = read_bool(v, key);
        } else if (key == "calib_method") {
            if (v == "max") d.calib_method = CalibMethod::Max;
            else if (v == "histogram") d.calib_method = CalibMethod::Histogram;
            else fail_key(key, "must be \"max\" or \"histogram\"", v);
        } else if (key == "amax") {
            if (v.is_null()) {
                d.amax.reset();
            } else if (v.is_array()) {
                d.amax.emplace();
                for (const nlohmann::json& a : v) d.amax->push_back(read_amax_value(a));
            } else if (v.is_number()) {
                d.amax = std::vector<float>{v.get<float>()};
            } else {
                fail_key(key, "must be a number, a list of numbers or null", v);
            }
        } else {
            fail("unknown key '" + key +
                 "' (expected num_bits, axis, unsigned, narrow_range, calib_method, amax, learn_amax)");
        }
    }
    validate(d);
    desc = d;
}

void to_json(nlohmann::json& j, const QuantDescriptor& d) {
    j = nlohmann::json::object();
    j["num_bits"] = d.num_bits;
    j["axis"] = d.axis ? nlohmann::json(*d.axis) : nlohmann::json(nullptr);
    j["unsigned"] = d.unsigned_;
    j["narrow_range"] = d.narrow_range;
    j["calib_method"] = calib_method_name(d.calib_method);
    if (!d.amax) j["amax"] = nullptr;
    else if (d.amax->size() == 1) j["amax"] = d.amax->front();
    else j["amax"] = *d.amax;
    j["learn_amax"] = d.learn_amax;
}

}  // namespace qdq
