// What the result files (calibration.json, onnx/evaluation.json, results.json) share: the
// strict reading every one of them goes through, and a task's metrics (trainers/task_metrics.h:
// the type, and its JSON form, metrics_to_json and metrics_from_json). A result file is read back
// by a later run (a pipeline resuming, a sweep's report), so each field is required, and a
// missing or wrongly typed one is an error naming the file and the dotted key.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "json/json_fields.h"
#include "trainers/task_metrics.h"

namespace qdq {

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
