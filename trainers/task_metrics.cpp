#include "trainers/task_metrics.h"

#include <limits>
#include <stdexcept>

#include "json/json_fields.h"

namespace qdq {

std::optional<double> Metrics::find(const std::string& name) const {
    if (auto it = scores.find(name); it != scores.end()) return it->second;
    if (auto it = counts.find(name); it != counts.end()) return (double)it->second;
    return std::nullopt;
}

double Metrics::value(const std::string& name, const std::string& source) const {
    if (std::optional<double> v = find(name)) return *v;
    throw std::runtime_error(source + ": the evaluation has no metric '" + name + "'");
}

double Metrics::percent(const std::string& name) const {
    auto it = scores.find(name);
    if (it == scores.end()) throw std::out_of_range("the metrics have no score '" + name + "'");
    switch (metric_scale(task, name)) {
        case MetricScale::fraction: return 100 * it->second;
        case MetricScale::percent: return it->second;
        case MetricScale::plain: break;
    }
    throw std::invalid_argument("'" + name + "' is not a percentage");
}

std::vector<std::string> shown_metrics(TaskKind task) {
    switch (task) {
        case TaskKind::classification: return {"accuracy"};
        case TaskKind::squad: return {"exact_match", "f1"};
        case TaskKind::mlm: return {"mlm_accuracy"};
    }
    throw std::invalid_argument("shown_metrics: not a task kind");
}

MetricScale metric_scale(TaskKind task, const std::string& name) {
    switch (task) {
        case TaskKind::classification: return name == "accuracy" ? MetricScale::fraction : MetricScale::plain;
        case TaskKind::squad: return name == "exact_match" || name == "f1" ? MetricScale::percent : MetricScale::plain;
        // The totals' mlm_accuracy and each named set's <set>_mlm_accuracy.
        case TaskKind::mlm: return name.ends_with("mlm_accuracy") ? MetricScale::fraction : MetricScale::plain;
    }
    throw std::invalid_argument("metric_scale: not a task kind");
}

std::vector<std::string> score_names(TaskKind task, const std::vector<std::string>& eval_sets) {
    switch (task) {
        case TaskKind::classification: return {"accuracy", "eval_loss"};
        case TaskKind::squad: return {"exact_match", "f1"};
        case TaskKind::mlm: {
            std::vector<std::string> names = {"eval_loss", "perplexity", "mlm_accuracy"};
            for (const std::string& set : eval_sets)
                for (const char* score : {"_loss", "_perplexity", "_mlm_accuracy"}) names.push_back(set + score);
            return names;
        }
    }
    throw std::invalid_argument("score_names: not a task kind");
}

std::optional<std::string> score_named(TaskKind task, const std::vector<std::string>& eval_sets,
                                       const std::string& name) {
    const auto logged = [](const std::string& n) { return n.starts_with("eval_") ? n : "eval_" + n; };
    for (const std::string& score : score_names(task, eval_sets))
        if (logged(score) == logged(name)) return score;
    return std::nullopt;
}

nlohmann::json metrics_to_json(const Metrics& metrics) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, value] : metrics.scores) j[name] = value;
    for (const auto& [name, count] : metrics.counts) j[name] = count;
    return j;
}

namespace {

// The one task whose shown metrics are all among the scores read (see metrics_from_json).
TaskKind inferred_task(const Metrics& m, const std::string& path, const std::string& source) {
    std::vector<TaskKind> fitting;
    std::string expected;
    for (const auto& [name, kind] : kTaskKindNames) {
        bool all = true;
        std::string shown;
        for (const std::string& metric : shown_metrics(kind)) {
            all = all && m.scores.count(metric);
            shown += (shown.empty() ? "" : " and ") + metric;
        }
        expected += (expected.empty() ? "" : "; ") + shown + " for " + name;
        if (all) fitting.push_back(kind);
    }
    if (fitting.size() == 1) return fitting[0];
    throw std::runtime_error(source + ": " + (path.empty() ? std::string("the metrics") : "'" + path + "'") +
                             (fitting.empty() ? " are no task's metrics: expected " + expected
                                              : " fit more than one task's metrics: " + expected));
}

}  // namespace

Metrics metrics_from_json(const nlohmann::json& j, const std::string& path, const std::string& source) {
    JsonFields f(j, path, source);
    Metrics metrics;
    for (const auto& [name, value] : j.items()) {
        // JSON has no NaN: a NaN score (a diverged loss) is written as null and read back so.
        if (value.is_null()) {
            f.ignore(name.c_str());
            metrics.scores[name] = std::numeric_limits<double>::quiet_NaN();
        } else if (value.is_number_integer()) {
            f.read(name.c_str(), metrics.counts[name]);
        } else {
            f.read(name.c_str(), metrics.scores[name]);
        }
    }
    f.finish();
    metrics.task = inferred_task(metrics, path, source);
    return metrics;
}

}  // namespace qdq
