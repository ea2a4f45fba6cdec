#include "results/result_fields.h"

#include <limits>
#include <stdexcept>

namespace qdq {

double metric_value(const Metrics& metrics, const std::string& name, const std::string& source) {
    auto it = metrics.values.find(name);
    if (it == metrics.values.end())
        throw std::runtime_error(source + ": the evaluation has no metric '" + name + "'");
    return it->second;
}

nlohmann::json metrics_to_json(const Metrics& metrics) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, value] : metrics.values) {
        if (metrics.counts.count(name)) j[name] = (int64_t)value;
        else j[name] = value;
    }
    return j;
}

Metrics metrics_from_json(const nlohmann::json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    Metrics metrics;
    for (const auto& [name, value] : j.items()) {
        if (value.is_number_integer()) {
            int64_t count = 0;
            f.read(name.c_str(), count);
            metrics.values[name] = (double)count;
            metrics.counts.insert(name);
        } else {
            read_real(f, j, name.c_str(), metrics.values[name]);
        }
    }
    f.finish();
    return metrics;
}

Metrics task_metrics(const nlohmann::json& evaluation) { return metrics_from_json(evaluation, "", "the task's evaluation"); }

std::optional<Metrics> optional_metrics(JsonFields& f, const char* key) {
    if (!f.has(key)) return std::nullopt;
    return metrics_from_json(f.section(key), f.path_of(key), f.source());
}

void read_real(JsonFields& f, const nlohmann::json& object, const char* key, double& out) {
    if (f.has(key) && object.at(key).is_null()) {
        f.ignore(key);
        out = std::numeric_limits<double>::quiet_NaN();
        return;
    }
    read_required(f, key, out);
}

const nlohmann::json& required_section(JsonFields& f, const char* key) {
    if (!f.has(key)) f.fail(key, "is missing");
    return f.section(key);
}

const nlohmann::json& required_list(JsonFields& f, const nlohmann::json& object, const char* key) {
    if (!f.has(key)) f.fail(key, "is missing");
    f.ignore(key);  // read here, not through f
    const nlohmann::json& list = object.at(key);
    if (!list.is_array()) f.fail(key, "must be a list, got " + list.dump());
    return list;
}

std::string item_path(const JsonFields& f, const char* key, size_t i) {
    return f.path_of(key) + "[" + std::to_string(i) + "]";
}

}  // namespace qdq
