// What the result files (calibration.json, onnx/evaluation.json, results.json) share: a task's
// metrics as a type, and the strict reading every one of them goes through. A result file is
// read back by a later run (a pipeline resuming, a sweep's report), so each field is required,
// and a missing or wrongly typed one is an error naming the file and the dotted key.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "json/json_fields.h"

namespace qdq {

// A task's metrics by name ("accuracy", "f1", "eval_loss", "eval_examples", ...), as
// Task::evaluate reports them. The counts among them (eval_examples, eval_windows) are integers
// in the files and stay so when written back; `values` holds every metric, counts included.
struct Metrics {
    std::map<std::string, double> values{};
    std::set<std::string> counts{};
    bool operator==(const Metrics&) const = default;
};

// The metric `name`; the error names `source`, the config that asked for it.
double metric_value(const Metrics& metrics, const std::string& name, const std::string& source);

nlohmann::json metrics_to_json(const Metrics& metrics);
// `path` is the object's dotted location in `source`; every value must be a number.
Metrics metrics_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);
// What Task::evaluate and Task::score return, as Metrics.
Metrics task_metrics(const nlohmann::json& evaluation);
// One model's metrics on the test set and, when the run holds out a validation split
// (data.validation_fraction), on that split, where its choices were made.
struct TestAndValidation {
    Metrics test{};
    std::optional<Metrics> validation{};
};

// The metrics at `key` of the object `f` reads, or none when the key is absent (the validation
// metrics of runs without a validation split).
std::optional<Metrics> optional_metrics(JsonFields& f, const char* key);

template <typename T>
void read_required(JsonFields& f, const char* key, T& out) {
    if (!f.has(key)) f.fail(key, "is missing");
    f.read(key, out);
}
// A required number. JSON has no infinity or NaN: an infinite SQNR (no noise) or a NaN loss is
// written as null, and null reads back as NaN, which writes as null again.
void read_real(JsonFields& f, const nlohmann::json& object, const char* key, double& out);
// A required object: read it with its own JsonFields at f.path_of(key).
const nlohmann::json& required_section(JsonFields& f, const char* key);
// A required list; `object` is the JSON `f` reads. Its items' paths: item_path(f, key, i).
const nlohmann::json& required_list(JsonFields& f, const nlohmann::json& object, const char* key);
std::string item_path(const JsonFields& f, const char* key, size_t i);

}  // namespace qdq
