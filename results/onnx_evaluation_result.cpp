#include "results/onnx_evaluation_result.h"

namespace qdq {

namespace {

nlohmann::json agreement_to_json(const std::vector<OutputFidelity>& agreement) {
    nlohmann::json j = nlohmann::json::array();
    for (const OutputFidelity& o : agreement)
        j.push_back({{"output", o.name}, {"rows", o.rows}, {"same_argmax", o.argmax_agree}, {"largest_difference", o.max_difference},
                     {"largest_probability_difference", o.max_probability_difference}});
    return j;
}

std::vector<OutputFidelity> agreement_from_json(const nlohmann::json& j, const std::string& path, const std::string& source) {
    std::vector<OutputFidelity> agreement;
    for (size_t i = 0; i < j.size(); ++i) {
        JsonFields f(j[i], path + "[" + std::to_string(i) + "]", source);
        OutputFidelity o;
        read_required(f, "output", o.name);
        read_required(f, "rows", o.rows);
        read_required(f, "same_argmax", o.argmax_agree);
        read_real(f, j[i], "largest_difference", o.max_difference);
        read_real(f, j[i], "largest_probability_difference", o.max_probability_difference);
        f.finish();
        agreement.push_back(o);
    }
    return agreement;
}

}  // namespace

nlohmann::json onnx_evaluation_to_json(const OnnxEvaluation& e) {
    nlohmann::json j = {{"model", e.model},
                        {"file", e.file},
                        {"metrics", metrics_to_json(e.metrics)},
                        {"ms_per_example", e.ms_per_example},
                        {"latency_ms", e.latency_ms},
                        {"threads", e.threads}};
    if (!e.checkpoint.empty()) j["checkpoint"] = e.checkpoint;
    if (!e.agreement.empty()) j["agreement"] = agreement_to_json(e.agreement);
    return j;
}

OnnxEvaluation onnx_evaluation_from_json(const nlohmann::json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    OnnxEvaluation e;
    read_required(f, "model", e.model);
    read_required(f, "file", e.file);
    e.metrics = metrics_from_json(required_section(f, "metrics"), f.path_of("metrics"), source);
    read_real(f, j, "ms_per_example", e.ms_per_example);
    read_real(f, j, "latency_ms", e.latency_ms);
    read_required(f, "threads", e.threads);
    f.read("checkpoint", e.checkpoint);
    nlohmann::json agreement;
    f.read("agreement", agreement);
    if (!agreement.is_null()) e.agreement = agreement_from_json(agreement, f.path_of("agreement"), source);
    f.finish();
    return e;
}

}  // namespace qdq
