#include "trainers/resume.h"

#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "json/json_file.h"
#include "trainers/classification_labels.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

// Under reduce_lr_on_plateau and early stopping the evaluations steer training: the rate and the
// stop follow them, so when they fall due and what they compare are part of the run there.
bool evaluations_steer(const TrainingSettings& t) {
    return t.lr_scheduler_type == ScheduleName::ReduceLrOnPlateau || t.early_stopping_patience.has_value();
}

// Sets the evaluations' settings to their defaults, unless they steer the run; logging_steps is
// theirs too when it is the interval of "steps" evaluations without eval_steps.
void forget_evaluation_cadence(TrainingSettings& t) {
    const TrainingSettings defaults;
    const bool steer = evaluations_steer(t);
    const bool logging_paces_evaluations =
        t.evaluation_strategy == IntervalStrategy::steps && t.eval_steps == defaults.eval_steps;
    if (!steer || !logging_paces_evaluations) t.logging_steps = defaults.logging_steps;
    if (steer) return;
    t.eval_steps = defaults.eval_steps;
    t.evaluation_strategy = defaults.evaluation_strategy;
    t.eval_delay = defaults.eval_delay;
    t.metric_for_best_model = defaults.metric_for_best_model;
    t.greater_is_better = defaults.greater_is_better;
}

// The run a config describes, without what may change between a run and its resumption: where
// and how often it reports and saves, and evaluates and on what unless the evaluations steer it;
// the device, and where the data files sit (compared by file name, so a run moves between
// machines); model.init, which the checkpoint's weights replace; and the pipeline's settings,
// what happens after this run. And the model's label names where they
// change nothing: a classification model that names the data set's labels in the data set's
// order is trained as one that names none, as every model was before the names were kept
// (trainers/classification_labels.h), and other tasks have no labels.
RunConfig comparable(RunConfig c) {
    const TrainingSettings defaults;
    TrainingSettings& t = c.training;
    t.output_dir = defaults.output_dir;
    forget_evaluation_cadence(t);
    t.logging_strategy = defaults.logging_strategy;
    t.logging_first_step = defaults.logging_first_step;
    t.eval_on_start = defaults.eval_on_start;
    t.disable_tqdm = defaults.disable_tqdm;
    t.save_steps = defaults.save_steps;
    t.save_strategy = defaults.save_strategy;
    t.save_total_limit = defaults.save_total_limit;
    t.save_only_model = defaults.save_only_model;
    t.per_device_eval_batch_size = defaults.per_device_eval_batch_size;
    t.load_best_model_at_end = defaults.load_best_model_at_end;
    t.ddp_bucket_cap_mb = defaults.ddp_bucket_cap_mb;
    t.use_cpu = defaults.use_cpu;
    t.report_to = defaults.report_to;
    t.logging_dir = defaults.logging_dir;
    DataSettings& d = c.data;
    d.data_dir.clear();
    if (!evaluations_steer(t)) {
        d.eval_files.clear();
        d.eval_sets.clear();
        d.max_eval_examples = DataSettings{}.max_eval_examples;
    }
    for (std::string& f : d.train_files) f = fs::path(f).filename().string();
    for (std::string& f : d.eval_files) f = fs::path(f).filename().string();
    for (EvalSet& set : d.eval_sets)
        for (std::string& f : set.files) f = fs::path(f).filename().string();
    d.vocab = fs::path(d.vocab).filename().string();
    c.model.init.clear();
    c.pipeline = PipelineSettings{};
    if (c.model.config && (c.data.task != TaskKind::classification ||
                           c.model.config->label_names == dataset_preset(c.data.dataset).label_names))
        c.model.config->label_names.clear();
    return c;
}

// The first key in which two configs describe different runs, as a JSON pointer
// ("/training/learning_rate"); empty when they describe the same run. Compared as the configs are
// written, so that an error can name the key.
std::string first_difference(const RunConfig& saved, const RunConfig& current) {
    const nlohmann::json diff =
        nlohmann::json::diff(run_config_to_json(comparable(saved)), run_config_to_json(comparable(current)));
    return diff.empty() ? "" : diff[0].value("path", "?");
}

const char* const kElsewhere =
    "Use a new training.output_dir, or start over in this one (train's --no-resume, or remove the folder)";

}  // namespace

void check_resumable(const RunConfig& saved, const RunConfig& current, const std::string& checkpoint) {
    if (saved.training.save_only_model)
        throw std::runtime_error(checkpoint + ": was saved under training.save_only_model, without the optimizer's "
                                 "state, so the run cannot resume from it. " + kElsewhere);
    const std::string where = first_difference(saved, current);
    if (where.empty()) return;
    throw std::runtime_error(checkpoint + ": was written by a run with a different config (" + where +
                             "); resuming would not give the run either config describes. " + kElsewhere);
}

std::optional<ReadableCheckpoint> newest_readable_checkpoint(const std::string& dir, bool set_aside) {
    std::vector<std::string> existing = list_checkpoints(dir);
    for (auto it = existing.rbegin(); it != existing.rend(); ++it) {
        try {
            return ReadableCheckpoint{*it, load_checkpoint(*it)};
        } catch (const std::exception& e) {
            const std::string aside = *it + ".unreadable";
            // One string, one write: under mpirun a line written in pieces can be split by other output.
            std::cerr << "qdqtrain: " + *it + " cannot be read (" + e.what() + ")" +
                             (set_aside ? "; kept as " + aside : std::string()) + "; trying the checkpoint before it\n";
            if (set_aside) fs::rename(*it, aside);
        }
    }
    if (!existing.empty())
        throw std::runtime_error(dir + ": none of its " + std::to_string(existing.size()) +
                                 " checkpoints can be read; --no-resume starts the run over");
    return std::nullopt;
}

void start_over(const std::string& dir) {
    for (const std::string& path : list_checkpoints(dir)) fs::remove(path);
    fs::remove(dir + "/model.h5");
    fs::remove(dir + "/eval_results.json");
}

std::optional<nlohmann::json> finished_run_metrics(const std::string& dir, const RunConfig& resolved) {
    const std::string config = dir + "/config.json", results = dir + "/eval_results.json";
    if (!fs::exists(dir + "/model.h5") || !fs::exists(results) || !fs::exists(config)) return std::nullopt;
    const std::string where = first_difference(run_config_from_json(read_json_file(config), config), resolved);
    if (!where.empty())
        throw std::runtime_error(dir + " holds a finished run of a different config (" + where + ", " + config +
                                 "); this one would overwrite its results. " + kElsewhere);
    return read_json_file(results);
}

}  // namespace qdq
