#include "results/accuracy_budget_result.h"

namespace qdq {

bool qat_takes_float_set(const AccuracyBudgetResult& budget, const CalibrationResult& calibration) {
    return !budget.float_quantizers.empty() && budget.float_quantizers.size() < calibration.quantizers.size();
}

nlohmann::json accuracy_budget_to_json(const AccuracyBudgetResult& r) {
    nlohmann::json j = {{"budget", r.budget},
                        {"method", r.method},
                        {"loss", r.loss},
                        {"held", r.held},
                        {"left_in_float", r.left_in_float},
                        {"float_quantizers", r.float_quantizers},
                        {"metrics", metrics_to_json(r.metrics)},
                        {"checkpoint", r.checkpoint}};
    if (r.validation) j["validation"] = metrics_to_json(*r.validation);
    if (r.validation_fp32) j["validation_fp32"] = metrics_to_json(*r.validation_fp32);
    return j;
}

AccuracyBudgetResult accuracy_budget_from_json(const nlohmann::json& j, const std::string& path,
                                               const std::string& source) {
    JsonFields f(j, path, source);
    AccuracyBudgetResult r;
    read_real(f, j, "budget", r.budget);
    read_required(f, "method", r.method);
    read_real(f, j, "loss", r.loss);
    read_required(f, "held", r.held);
    read_required(f, "left_in_float", r.left_in_float);
    read_required(f, "float_quantizers", r.float_quantizers);
    r.metrics = metrics_from_json(required_section(f, "metrics"), f.path_of("metrics"), source);
    r.validation = optional_metrics(f, "validation");
    r.validation_fp32 = optional_metrics(f, "validation_fp32");
    read_required(f, "checkpoint", r.checkpoint);
    f.finish();
    return r;
}

}  // namespace qdq
