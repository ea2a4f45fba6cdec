// The run config's training section: Hugging Face's TrainingArguments names, read and checked.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "json/json_fields.h"
#include "trainers/run_config.h"

namespace qdq {

namespace {

void check_positive(const JsonFields& f, const char* key, double v) {
    if (!(v > 0)) f.fail(key, "must be positive");
}

// An IntervalStrategy by its key, or by `alias` (HF's later name for it), not both.
void read_strategy(JsonFields& training, const char* key, const char* alias, std::optional<IntervalStrategy>& out) {
    if (alias && training.has(key) && training.has(alias))
        training.fail(alias, std::string("and ") + key + " are one setting: give one");
    const char* given = alias && training.has(alias) ? alias : key;
    if (!training.has(given)) return;
    IntervalStrategy strategy{};
    training.read_choice(given, strategy, kIntervalStrategyNames);
    out = strategy;
}

// A whole number of steps, or a share of the run's steps in (0, 1) (trainers/interval_strategy.h);
// as HF, a number over 1 must be whole.
void read_step_count(JsonFields& training, const char* key, StepCount& out) {
    nlohmann::json value;
    training.read(key, value);
    if (value.is_null()) return;
    if (value.is_number_integer()) {
        out = {value.get<int64_t>(), 0};
        return;
    }
    const double x = value.is_number() ? value.get<double>() : NAN;
    if (x > 0 && x < 1) out = {0, x};
    else if (x >= 1 && x == std::floor(x) && x < 9e15) out = {(int64_t)x, 0};
    else training.fail(key, "must be a whole number of steps, or a share of the run's steps in (0, 1); got " + value.dump());
}

void check_training_settings(const JsonFields& training, const TrainingSettings& t) {
    check_positive(training, "per_device_train_batch_size", t.per_device_train_batch_size);
    check_positive(training, "per_device_eval_batch_size", t.per_device_eval_batch_size);
    check_positive(training, "gradient_accumulation_steps", t.gradient_accumulation_steps);
    check_positive(training, "learning_rate", t.learning_rate);
    check_positive(training, "ddp_bucket_cap_mb", t.ddp_bucket_cap_mb);
    if (t.max_steps <= 0) check_positive(training, "num_train_epochs", t.num_train_epochs);
    if (t.save_total_limit && *t.save_total_limit < 0) training.fail("save_total_limit", "must be 0 or more");
    if (steps_of(t.logging_steps, 1) <= 0) training.fail("logging_steps", "must be positive");
    if (t.data_seed && *t.data_seed < 0) training.fail("data_seed", "must be 0 or more");
    if (t.optim != "adamw_torch" && t.optim != "adamw_torch_fused")
        training.fail("optim", "must be adamw_torch or adamw_torch_fused (the same AdamW update); got '" + t.optim + "'");
    if (!(t.eval_delay >= 0) || !std::isfinite(t.eval_delay)) training.fail("eval_delay", "must be 0 or more");
    if (!(t.label_smoothing_factor >= 0 && t.label_smoothing_factor < 1))
        training.fail("label_smoothing_factor", "must lie in [0, 1)");
    if (t.save_strategy == IntervalStrategy::steps && steps_of(t.save_steps, 1) <= 0)
        training.fail("save_steps", "must be positive under save_strategy \"steps\"");
    if (t.load_best_model_at_end && t.evaluation_strategy == IntervalStrategy::no)
        training.fail("load_best_model_at_end", "chooses among evaluations, and evaluation_strategy is \"no\"");
    if (t.lr_scheduler_type == ScheduleName::ReduceLrOnPlateau && t.evaluation_strategy == IntervalStrategy::no)
        training.fail("lr_scheduler_type", "\"reduce_lr_on_plateau\" follows evaluations, and evaluation_strategy is \"no\"");
    if (t.load_best_model_at_end && t.save_strategy == IntervalStrategy::no)
        training.fail("load_best_model_at_end", "loads the best checkpoint, and save_strategy \"no\" writes none");
    if (t.early_stopping_patience && *t.early_stopping_patience < 1) training.fail("early_stopping_patience", "must be 1 or more");
    if (t.early_stopping_patience && !t.load_best_model_at_end)
        training.fail("early_stopping_patience", "stops where the best model is kept: it needs load_best_model_at_end, as HF's "
                                                 "EarlyStoppingCallback does");
    if (!(t.early_stopping_threshold >= 0) || !std::isfinite(t.early_stopping_threshold))
        training.fail("early_stopping_threshold", "must be 0 or more");
    if (t.early_stopping_threshold != 0 && !t.early_stopping_patience)
        training.fail("early_stopping_threshold", "is early stopping's, and early_stopping_patience is not set");
    try {
        check_schedule(schedule_options(t, 0));
    } catch (const std::runtime_error& e) {
        training.fail("lr_scheduler_type", std::string("with its warmup and lr_scheduler_kwargs: ") + e.what());
    }
}

// HF's report_to: "none" and "all" (every integration there is) stand alone; other names each
// name an integration.
std::vector<ReportTo> parse_report_to(JsonFields& training) {
    std::vector<std::string> names;
    training.read("report_to", names);
    std::vector<ReportTo> report_to;
    if (names.size() == 1 && (names[0] == "none" || names[0] == "all")) {
        if (names[0] == "all")
            for (const auto& [name, integration] : kReportToNames) report_to.push_back(integration);
        return report_to;
    }
    for (const std::string& name : names) {
        std::optional<ReportTo> integration = choice_named<ReportTo>(name, kReportToNames);
        if (!integration)
            training.fail("report_to", "names '" + name + "'; integrations: " + choice_names(kReportToNames) +
                                           " (or \"all\", or \"none\" alone)");
        if (std::find(report_to.begin(), report_to.end(), *integration) == report_to.end())
            report_to.push_back(*integration);
    }
    return report_to;
}

}  // namespace

TrainingSettings training_settings_from_json(const nlohmann::json& section, const std::string& source) {
    JsonFields training(section, "training", source);
    TrainingSettings t;
    training.read("output_dir", t.output_dir);
    training.read("seed", t.seed);
    training.read("data_seed", t.data_seed);
    training.read("per_device_train_batch_size", t.per_device_train_batch_size);
    training.read("per_device_eval_batch_size", t.per_device_eval_batch_size);
    training.read("gradient_accumulation_steps", t.gradient_accumulation_steps);
    training.read("num_train_epochs", t.num_train_epochs);
    training.read("max_steps", t.max_steps);
    training.read("learning_rate", t.learning_rate);
    training.read("weight_decay", t.weight_decay);
    training.read("adam_beta1", t.adam_beta1);
    training.read("adam_beta2", t.adam_beta2);
    training.read("adam_epsilon", t.adam_epsilon);
    training.read("max_grad_norm", t.max_grad_norm);
    training.read("optim", t.optim);
    training.read("label_smoothing_factor", t.label_smoothing_factor);
    training.read_choice("lr_scheduler_type", t.lr_scheduler_type, kScheduleNames);
    if (training.has("lr_scheduler_kwargs"))
        t.lr_scheduler_kwargs = schedule_kwargs_from_json(training.section("lr_scheduler_kwargs"),
                                                          training.path_of("lr_scheduler_kwargs"), source);
    training.read("warmup_steps", t.warmup_steps);
    training.read("warmup_ratio", t.warmup_ratio);
    read_step_count(training, "logging_steps", t.logging_steps);
    read_strategy(training, "logging_strategy", nullptr, t.logging_strategy);
    training.read("logging_first_step", t.logging_first_step);
    read_step_count(training, "eval_steps", t.eval_steps);
    read_step_count(training, "save_steps", t.save_steps);
    read_strategy(training, "evaluation_strategy", "eval_strategy", t.evaluation_strategy);
    read_strategy(training, "save_strategy", nullptr, t.save_strategy);
    training.read("eval_delay", t.eval_delay);
    training.read("eval_on_start", t.eval_on_start);
    training.read("save_total_limit", t.save_total_limit);
    training.read("load_best_model_at_end", t.load_best_model_at_end);
    training.read("metric_for_best_model", t.metric_for_best_model);
    training.read("greater_is_better", t.greater_is_better);
    training.read("early_stopping_patience", t.early_stopping_patience);
    training.read("early_stopping_threshold", t.early_stopping_threshold);
    training.read("group_by_length", t.group_by_length);
    training.read("dataloader_drop_last", t.dataloader_drop_last);
    training.read("save_only_model", t.save_only_model);
    training.read("disable_tqdm", t.disable_tqdm);
    training.read("bf16", t.bf16);
    training.read("tf32", t.tf32);
    training.read("ddp_bucket_cap_mb", t.ddp_bucket_cap_mb);
    training.read("use_cpu", t.use_cpu);
    t.report_to = parse_report_to(training);
    training.read("logging_dir", t.logging_dir);
    if (training.has("fp16"))
        training.fail("fp16", "is not read: FP16 with loss scaling is not implemented here; bf16 (true) runs every "
                              "matrix product with bf16 operands and FP32 accumulation, and needs no loss scaling");
    if (training.has("overwrite_output_dir"))
        training.fail("overwrite_output_dir", "is not read: a run continues from its output_dir's newest checkpoint "
                                              "and leaves a finished run as it is; train's --no-resume starts over");
    training.finish();
    check_training_settings(training, t);
    return t;
}

ScheduleOptions schedule_options(const TrainingSettings& t, int64_t total_steps) {
    return {t.lr_scheduler_type, t.learning_rate, t.warmup_steps, t.warmup_ratio, total_steps, t.lr_scheduler_kwargs};
}

}  // namespace qdq
