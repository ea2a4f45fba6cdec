#include "quant/quant_descriptor.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "json/json_fields.h"

namespace qdq {

namespace {

[[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("quant descriptor: " + what);
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
    if (d.learn_amax && d.learn_step_size)
        fail("learn_amax (a PACT clip) and learn_step_size (LSQ) are two ways to learn one range: choose one");
    if (d.calib_method == CalibMethod::Histogram && d.axis)
        fail("histogram calibration is per tensor only: axis must be null");
}

QuantDescriptor quant_descriptor_from_json(const nlohmann::json& j, const std::string& source, const std::string& path,
                                           const QuantDescriptor& defaults) {
    JsonFields f(j, path, source);
    QuantDescriptor d = defaults;
    f.read("num_bits", d.num_bits);
    if (d.num_bits < 2 || d.num_bits > 16) f.fail("num_bits", "must be in [2, 16], got " + std::to_string(d.num_bits));
    f.read("axis", d.axis);
    f.read("unsigned", d.unsigned_);
    f.read("narrow_range", d.narrow_range);
    f.read("learn_amax", d.learn_amax);
    f.read("learn_step_size", d.learn_step_size);
    f.read_choice("calib_method", d.calib_method, {{"max", CalibMethod::Max}, {"histogram", CalibMethod::Histogram}});
    nlohmann::json amax;
    f.read("amax", amax);
    if (amax.is_number()) {
        d.amax = std::vector<float>{amax.get<float>()};
    } else if (amax.is_array()) {
        d.amax.emplace();
        for (const nlohmann::json& a : amax) {
            if (!a.is_number()) f.fail("amax", "must hold numbers, got " + amax.dump());
            d.amax->push_back(a.get<float>());
        }
    } else if (!amax.is_null()) {
        f.fail("amax", "must be a number, a list of numbers or null, got " + amax.dump());
    }
    f.finish();
    if (path.empty()) {
        validate(d);
        return d;
    }
    try {
        validate(d);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(source + ": '" + path + "': " + e.what());
    }
    return d;
}

void from_json(const nlohmann::json& j, QuantDescriptor& desc) { desc = quant_descriptor_from_json(j, "quant descriptor"); }

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
    j["learn_step_size"] = d.learn_step_size;
}

}  // namespace qdq
