#include "results/calibration_result.h"

namespace qdq {

namespace {

using json = nlohmann::json;

CalibrationCost cost_from_json(const json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    CalibrationCost c;
    read_required(f, "calibration_examples", c.calibration_examples);
    read_required(f, "batches", c.batches);
    read_real(f, j, "plain_pass_seconds", c.plain_pass_seconds);
    read_real(f, j, "collect_seconds", c.collect_seconds);
    read_real(f, j, "collect_ratio", c.collect_ratio);
    read_real(f, j, "ranges_seconds_all_methods", c.ranges_seconds_all_methods);
    read_real(f, j, "total_ratio", c.total_ratio);
    f.finish();
    return c;
}

json method_to_json(const CalibratedMethod& m) {
    json j = {{"method", m.name}, {"metrics", metrics_to_json(m.metrics)}, {"checkpoint", m.checkpoint}};
    if (m.validation) j["validation"] = metrics_to_json(*m.validation);
    return j;
}


CalibratedMethod method_from_json(const json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    CalibratedMethod m;
    read_required(f, "method", m.name);
    m.metrics = metrics_from_json(required_section(f, "metrics"), f.path_of("metrics"), source);
    read_required(f, "checkpoint", m.checkpoint);
    m.validation = optional_metrics(f, "validation");
    f.finish();
    return m;
}

json quantizer_to_json(const QuantizerStats& q) {
    json j = {{"name", q.name}, {"kind", q.weight ? "weight" : "activation"}};
    if (q.weight) {
        j["amax_max"] = q.weight->amax_max;
        j["amax_min"] = q.weight->amax_min;
        j["clipped_fraction"] = q.weight->clipped_fraction;
        j["sqnr_db"] = q.weight->sqnr_db;
    }
    if (q.histogram)
        j["histogram"] = {{"bin_width", q.histogram->bin_width}, {"counts", q.histogram->counts}, {"max", q.histogram->max}};
    for (const auto& [method, s] : q.methods)
        j["methods"][method] = {{"amax", s.amax}, {"clipped_fraction", s.clipped_fraction}, {"sqnr_db", s.sqnr_db}};
    return j;
}

// Each count is checked as an integer: get<int64_t> would truncate 1.5.
std::vector<int64_t> counts_from_json(JsonFields& f, const json& object, const char* key) {
    std::vector<int64_t> counts;
    for (const json& c : required_list(f, object, key)) {
        if (!c.is_number_integer()) f.fail(key, "must hold integers only, got " + c.dump());
        counts.push_back(c.get<int64_t>());
    }
    return counts;
}

// An activation's histogram and its ranges by method; "histogram" and "methods" are absent for
// a quantizer calibrated without one.
void activation_from_json(JsonFields& f, QuantizerStats& q) {
    const std::string& source = f.source();
    if (f.has("histogram")) {
        const json& h = f.section("histogram");
        JsonFields hf(h, f.path_of("histogram"), source);
        ActivationHistogram histogram;
        read_real(hf, h, "bin_width", histogram.bin_width);
        histogram.counts = counts_from_json(hf, h, "counts");
        read_real(hf, h, "max", histogram.max);
        hf.finish();
        q.histogram = histogram;
    }
    if (!f.has("methods")) return;
    const json& methods = f.section("methods");
    JsonFields by_method(methods, f.path_of("methods"), source);
    for (const auto& item : methods.items()) {
        const std::string& method = item.key();
        const json& ranges = by_method.section(method.c_str());
        JsonFields mf(ranges, by_method.path_of(method.c_str()), source);
        MethodRangeStats stats;
        read_real(mf, ranges, "amax", stats.amax);
        read_real(mf, ranges, "clipped_fraction", stats.clipped_fraction);
        read_real(mf, ranges, "sqnr_db", stats.sqnr_db);
        mf.finish();
        q.methods[method] = stats;
    }
    by_method.finish();
}

QuantizerStats quantizer_from_json(const json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    QuantizerStats q;
    read_required(f, "name", q.name);
    bool weight = false;
    if (!f.has("kind")) f.fail("kind", "is missing");
    f.read_choice("kind", weight, {{"weight", true}, {"activation", false}});
    if (weight) {
        WeightRangeStats w;
        read_real(f, j, "amax_max", w.amax_max);
        read_real(f, j, "amax_min", w.amax_min);
        read_real(f, j, "clipped_fraction", w.clipped_fraction);
        read_real(f, j, "sqnr_db", w.sqnr_db);
        q.weight = w;
    } else {
        activation_from_json(f, q);
    }
    f.finish();
    return q;
}

json sensitivity_to_json(const SensitivitySweep& s) {
    json rows = json::array();
    for (const SensitivityRow& row : s.rows) rows.push_back({{"left_in_float", row.left_in_float}, {"value", row.value}});
    json j = {{"method", s.method}, {"baseline", s.baseline}, {"rows", rows}};
    if (s.fp32) j["fp32"] = *s.fp32;
    return j;
}

SensitivitySweep sensitivity_from_json(const json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    SensitivitySweep s;
    read_required(f, "method", s.method);
    read_real(f, j, "baseline", s.baseline);
    const json& rows = required_list(f, j, "rows");
    for (size_t i = 0; i < rows.size(); ++i) {
        JsonFields rf(rows[i], item_path(f, "rows", i), source);
        SensitivityRow row;
        read_required(rf, "left_in_float", row.left_in_float);
        read_real(rf, rows[i], "value", row.value);
        rf.finish();
        s.rows.push_back(row);
    }
    if (f.has("fp32")) {
        double fp32 = 0;
        read_real(f, j, "fp32", fp32);
        s.fp32 = fp32;
    }
    f.finish();
    return s;
}

}  // namespace

const CalibratedMethod* find_method(const CalibrationResult& result, const std::string& name) {
    for (const CalibratedMethod& m : result.methods)
        if (m.name == name) return &m;
    return nullptr;
}

json calibration_cost_to_json(const CalibrationCost& c) {
    return {{"calibration_examples", c.calibration_examples},
            {"batches", c.batches},
            {"plain_pass_seconds", c.plain_pass_seconds},
            {"collect_seconds", c.collect_seconds},
            {"collect_ratio", c.collect_ratio},
            {"ranges_seconds_all_methods", c.ranges_seconds_all_methods},
            {"total_ratio", c.total_ratio}};
}

json calibration_result_to_json(const CalibrationResult& r) {
    json methods = json::array(), quantizers = json::array();
    for (const CalibratedMethod& m : r.methods) methods.push_back(method_to_json(m));
    for (const QuantizerStats& q : r.quantizers) quantizers.push_back(quantizer_to_json(q));
    json j = {{"checkpoint", r.checkpoint},
              {"metric", r.metric},
              {"quantization", quantization_config_to_json(r.quantization)},
              {"fp32", metrics_to_json(r.fp32)},
              {"methods", methods},
              {"best", r.best},
              {"cost", calibration_cost_to_json(r.cost)},
              {"quantizers", quantizers}};
    if (r.fp32_validation) j["fp32_validation"] = metrics_to_json(*r.fp32_validation);
    if (r.sensitivity) j["sensitivity"] = sensitivity_to_json(*r.sensitivity);
    return j;
}

CalibrationResult calibration_result_from_json(const json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    CalibrationResult r;
    read_required(f, "checkpoint", r.checkpoint);
    read_required(f, "metric", r.metric);
    r.quantization = quantization_config_from_json(required_section(f, "quantization"), source);
    r.fp32 = metrics_from_json(required_section(f, "fp32"), f.path_of("fp32"), source);
    r.fp32_validation = optional_metrics(f, "fp32_validation");
    const json& methods = required_list(f, j, "methods");
    for (size_t i = 0; i < methods.size(); ++i)
        r.methods.push_back(method_from_json(methods[i], item_path(f, "methods", i), source));
    read_required(f, "best", r.best);
    r.cost = cost_from_json(required_section(f, "cost"), f.path_of("cost"), source);
    const json& quantizers = required_list(f, j, "quantizers");
    for (size_t i = 0; i < quantizers.size(); ++i)
        r.quantizers.push_back(quantizer_from_json(quantizers[i], item_path(f, "quantizers", i), source));
    if (f.has("sensitivity"))
        r.sensitivity = sensitivity_from_json(f.section("sensitivity"), f.path_of("sensitivity"), source);
    f.finish();
    return r;
}

}  // namespace qdq
