// A task's metrics as a type: what Task::evaluate and Task::score return, what the training loop
// logs and keeps, what the stages compare and the reports show. The metrics know their task, so
// which of them a results table shows, and which are fractions shown as percentages, is asked of
// the task kind rather than guessed from the names present. JSON only at the files: eval_results.json,
// metrics.jsonl's eval records, and the metrics objects of the result files (results/).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainers/task_kind.h"

namespace qdq {

// How a metric reads as a percentage.
enum class MetricScale {
    fraction,  // in [0, 1], shown times 100: accuracy, mlm_accuracy
    percent,   // already in %: SQuAD's exact_match and f1, as the official script scores them
    plain,     // not a percentage: losses, perplexity, counts
};

struct Metrics {
    TaskKind task = TaskKind::classification;
    // classification: accuracy, eval_loss; squad: exact_match, f1; mlm: eval_loss, perplexity,
    // mlm_accuracy, and per named evaluation set <set>_loss, <set>_perplexity, <set>_mlm_accuracy.
    std::map<std::string, double> scores{};
    // What was scored: eval_examples (all tasks), eval_windows (squad), <set>_examples (mlm).
    // Integers in the files, and so kept apart from the scores.
    std::map<std::string, int64_t> counts{};

    bool operator==(const Metrics&) const = default;

    // The score or count `name`, if the metrics have it.
    std::optional<double> find(const std::string& name) const;
    // The score or count `name`; the error names `source`, the config that asked for it.
    double value(const std::string& name, const std::string& source) const;
    // The score `name` in %, by its scale; throws for a metric missing or not a percentage.
    double percent(const std::string& name) const;
};

// The metrics a results table (results.md, a sweep's tables) shows for `task`, each in %, the main
// one last: the one plotted, and the one the pipeline's deployed QAT run is chosen by.
std::vector<std::string> shown_metrics(TaskKind task);
MetricScale metric_scale(TaskKind task, const std::string& name);

// The scores Task::evaluate returns for `task`; eval_sets names an mlm run's evaluation sets.
std::vector<std::string> score_names(TaskKind task, const std::vector<std::string>& eval_sets);
// The score that training.metric_for_best_model `name` means, as the metrics hold it: the name is
// compared as Hugging Face's Trainer logs and looks it up, with "eval_" before it unless already
// there ("accuracy" and "eval_accuracy" are accuracy, "loss" is eval_loss). None for no score.
std::optional<std::string> score_named(TaskKind task, const std::vector<std::string>& eval_sets,
                                       const std::string& name);

// The metrics as every file holds them: one object, scores as reals (NaN as null) and counts as
// integers, without the task, which the files' readers know from the names (below).
nlohmann::json metrics_to_json(const Metrics& metrics);
// `path` is the object's dotted location in `source`; every value must be a number or null.
// Integers are counts, the rest scores. The files hold no task: it is inferred here, and only
// here, as the task whose shown metrics are all present (accuracy: classification; exact_match
// and f1: squad; mlm_accuracy: mlm). An object that fits none is refused.
Metrics metrics_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);

}  // namespace qdq
