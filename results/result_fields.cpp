#include "results/result_fields.h"

#include <limits>
#include <stdexcept>

namespace qdq {

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
