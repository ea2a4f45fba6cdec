#include "trainers/run_config.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "data/document_slice.h"
#include "json/json_fields.h"
#include "qdqbert/calibration.h"
#include "trainers/qat_variant.h"
#include "trainers/task_metrics.h"

namespace qdq {

void set_config_key(nlohmann::json& raw, const std::string& key, const nlohmann::json& value, const std::string& what) {
    nlohmann::json* node = &raw;
    size_t start = 0;
    while (true) {
        size_t dot = key.find('.', start);
        std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (part.empty()) throw std::runtime_error(what + ": bad key '" + key + "'");
        if (!node->is_object()) throw std::runtime_error(what + ": '" + key + "' is not inside an object");
        if (dot == std::string::npos) {
            (*node)[part] = value;
            return;
        }
        node = &(*node)[part];
        if (node->is_null()) *node = nlohmann::json::object();
        start = dot + 1;
    }
}

namespace {

void check_positive(const JsonFields& f, const char* key, double v) {
    if (!(v > 0)) f.fail(key, "must be positive");
}

// data.eval_files as {"name": files, ...}: named evaluation sets, as Hugging Face's dict of
// eval_dataset (trainers/run_config.h).
void read_eval_sets(JsonFields& data, DataSettings& d) {
    nlohmann::json value;
    data.read("eval_files", value);
    if (!value.is_object()) {
        data.read("eval_files", d.eval_files);
        return;
    }
    if (d.task != TaskKind::mlm) data.fail("eval_files", "named evaluation sets ({\"name\": files}) are for data.task mlm");
    if (value.empty()) data.fail("eval_files", "names no evaluation set");
    JsonFields sets(value, data.path_of("eval_files"), data.source());
    for (const auto& [name, files] : value.items()) {
        if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
            data.fail("eval_files", "set name '" + name + "' must be lowercase letters, digits and _ (it names metrics)");
        std::vector<std::string> paths;
        sets.read(name.c_str(), paths);
        d.eval_sets.push_back({name, paths});
    }
}

// A [begin:end] slice of a corpus file's documents (data/document_slice.h) is mlm's alone.
void check_slices(const JsonFields& data, const char* key, TaskKind task, const std::vector<std::string>& files) {
    for (const std::string& f : files) {
        DocumentSlice slice;
        try {
            slice = parse_document_slice(f);
        } catch (const std::invalid_argument& e) {
            data.fail(key, e.what());
        }
        if (!slice.whole_file() && task != TaskKind::mlm)
            data.fail(key, "a [begin:end] slice of documents is for data.task mlm: " + f);
    }
}

void read_optional_bool(JsonFields& f, const nlohmann::json& section, const char* key, std::optional<bool>& out) {
    if (!f.has(key) || section.at(key).is_null()) {
        f.ignore(key);
        return;
    }
    bool value = false;
    f.read(key, value);
    out = value;
}

void check_data_settings(const JsonFields& data, const DataSettings& d) {
    check_slices(data, "train_files", d.task, d.train_files);
    check_slices(data, "eval_files", d.task, d.eval_files);
    for (const EvalSet& set : d.eval_sets) check_slices(data, "eval_files", d.task, set.files);
    if (d.max_seq_length < 8) data.fail("max_seq_length", "must be at least 8");
    for (auto [key, count] : {std::pair{"max_train_examples", d.max_train_examples}, {"max_eval_examples", d.max_eval_examples}})
        if (count == 0 || count < -1) data.fail(key, "must be positive, or -1 for all, got " + std::to_string(count));
    if (d.task == TaskKind::squad && (d.doc_stride <= 0 || d.doc_stride >= d.max_seq_length))
        data.fail("doc_stride", "must be in (0, max_seq_length)");
    if (d.squad_eval_fraction < 0 || d.squad_eval_fraction >= 1) data.fail("squad_eval_fraction", "must be in [0, 1)");
    if (!(d.validation_fraction >= 0 && d.validation_fraction < 1)) data.fail("validation_fraction", "must be in [0, 1)");
    if (d.mlm_probability <= 0 || d.mlm_probability >= 1) data.fail("mlm_probability", "must be in (0, 1)");
}

DataSettings data_settings_from_json(const nlohmann::json& section, const std::string& source) {
    JsonFields data(section, "data", source);
    DataSettings d;
    data.read_choice("task", d.task, kTaskKindNames);
    // The reader preset is classification's; other tasks read their own formats.
    if (d.task == TaskKind::classification) data.read_choice("dataset", d.dataset, kClassificationDatasetNames);
    else data.ignore("dataset");
    data.read("data_dir", d.data_dir);
    data.read("train_files", d.train_files);
    read_eval_sets(data, d);
    data.read("vocab", d.vocab);
    read_optional_bool(data, section, "do_lower_case", d.do_lower_case);
    data.read("max_seq_length", d.max_seq_length);
    data.read("doc_stride", d.doc_stride);
    data.read("max_train_examples", d.max_train_examples);
    data.read("max_eval_examples", d.max_eval_examples);
    data.read("squad_eval_fraction", d.squad_eval_fraction);
    data.read("squad_split_seed", d.squad_split_seed);
    data.read("validation_fraction", d.validation_fraction);
    data.read("validation_seed", d.validation_seed);
    data.read("mlm_probability", d.mlm_probability);
    data.finish();
    check_data_settings(data, d);
    return d;
}

ModelSettings model_settings_from_json(const nlohmann::json& section, const std::string& source) {
    JsonFields model(section, "model", source);
    ModelSettings m;
    nlohmann::json config;
    model.read("config", config);
    if (config.is_string()) m.config_file = config.get<std::string>();
    else if (config.is_object()) m.config = nn::bert_config_from_json(config, source, "model.config");
    else if (!config.is_null()) model.fail("config", "must be a path or an object");
    model.read("init", m.init);
    model.finish();
    if (!m.config && m.config_file.empty() && m.init.empty())
        throw std::runtime_error(source + ": 'model' needs a config or an init checkpoint");
    return m;
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
    read_optional_bool(training, section, "greater_is_better", t.greater_is_better);
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

namespace {

// "best", or one of calibrate's rows by name.
std::optional<CalibrationMethod> calibration_choice(const JsonFields& pipeline, const std::string& name) {
    if (name == "best") return std::nullopt;
    std::string names = "best";
    for (const CalibrationMethod& m : standard_calibration_methods()) {
        if (calibration_method_name(m) == name) return m;
        names += ", " + calibration_method_name(m);
    }
    pipeline.fail("calibration", "must be one of " + names + "; got '" + name + "'");
}

void read_accuracy_budget(JsonFields& pipeline, const nlohmann::json& section, PipelineSettings& p) {
    if (!pipeline.has("accuracy_budget") || section.at("accuracy_budget").is_null()) {
        pipeline.ignore("accuracy_budget");
        return;
    }
    double budget = 0;
    pipeline.read("accuracy_budget", budget);
    if (!(budget >= 0) || !std::isfinite(budget)) pipeline.fail("accuracy_budget", "must be a number of points >= 0");
    p.accuracy_budget = budget;
    if (p.sensitivity == Sensitivity::none)
        pipeline.fail("accuracy_budget", "leaves quantizers in float by calibrate's sensitivity sweep: "
                                         "pipeline.sensitivity must be layers or quantizers");
}

}  // namespace

PipelineSettings pipeline_settings_from_json(const nlohmann::json& section, const std::string& source) {
    JsonFields pipeline(section, "pipeline", source);
    PipelineSettings p;
    pipeline.read("qat_learning_rate_ratio", p.qat_learning_rate_ratio);
    if (!(p.qat_learning_rate_ratio > 0)) pipeline.fail("qat_learning_rate_ratio", "must be positive");
    pipeline.read("qat_num_train_epochs", p.qat_num_train_epochs);
    if (p.qat_num_train_epochs < 0) pipeline.fail("qat_num_train_epochs", "must not be negative");
    std::string calibration = "best";
    pipeline.read("calibration", calibration);
    p.calibration = calibration_choice(pipeline, calibration);
    pipeline.read_choice("onnx_target", p.onnx_target, kQdqTargetNames);
    pipeline.read("onnx", p.onnx);
    pipeline.read("onnx_threads", p.onnx_threads);
    if (p.onnx_threads < 0) pipeline.fail("onnx_threads", "must not be negative");
    pipeline.read_choice("sensitivity", p.sensitivity, kSensitivityNames);
    pipeline.read("validation_fraction", p.validation_fraction);
    if (!(p.validation_fraction >= 0 && p.validation_fraction < 1)) pipeline.fail("validation_fraction", "must be in [0, 1)");
    if (pipeline.has("qat_variants")) {
        pipeline.ignore("qat_variants");
        p.qat_variants = parse_qat_variants(section.at("qat_variants"), source);
    }
    read_accuracy_budget(pipeline, section, p);
    pipeline.finish();
    return p;
}

DistillationSettings distillation_settings_from_json(const nlohmann::json& section, const std::string& source) {
    JsonFields distillation(section, "distillation", source);
    DistillationSettings d;
    distillation.read("teacher", d.teacher);
    distillation.read("temperature", d.temperature);
    distillation.read("alpha", d.alpha);
    distillation.finish();
    // No teacher key: the pipeline's QAT stage learns from its FP32 stage's model; a plain run
    // refuses to start (trainers/distillation.h teacher_model_config).
    if (section.contains("teacher") && d.teacher.empty())
        distillation.fail("teacher", "must name the teacher's model file (or be left out: the pipeline's FP32 model)");
    if (!(d.temperature > 0) || !std::isfinite(d.temperature)) distillation.fail("temperature", "must be positive");
    if (!(d.alpha >= 0 && d.alpha <= 1)) distillation.fail("alpha", "must be in [0, 1]");
    return d;
}

namespace {

// training.metric_for_best_model as the task's metrics name it, checked now rather than at the
// first evaluation, after training has begun.
void resolve_best_model_metric(RunConfig& c) {
    std::string& name = c.training.metric_for_best_model;
    if (name.empty()) return;
    std::vector<std::string> sets;
    for (const EvalSet& set : c.data.eval_sets) sets.push_back(set.name);
    if (std::optional<std::string> score = score_named(c.data.task, sets, name)) {
        name = *score;
        return;
    }
    std::string names;
    for (const std::string& score : score_names(c.data.task, sets)) names += (names.empty() ? "" : ", ") + score;
    throw std::runtime_error(c.source + ": 'training.metric_for_best_model' is '" + name + "', which data.task " +
                             name_of_choice(c.data.task, kTaskKindNames) + " does not report; it reports " + names +
                             " (each also with eval_ before it)");
}

}  // namespace

RunConfig run_config_from_json(const nlohmann::json& json, const std::string& source) {
    RunConfig c;
    c.source = source;
    JsonFields root(json, "", source);
    c.model = model_settings_from_json(root.section("model"), source);
    c.data = data_settings_from_json(root.section("data"), source);
    c.training = training_settings_from_json(root.section("training"), source);
    resolve_best_model_metric(c);
    if (c.training.label_smoothing_factor > 0 && c.data.task == TaskKind::squad)
        throw std::runtime_error(c.source + ": 'training.label_smoothing_factor' smooths a loss over labels; data.task "
                                 "squad has none (HF's Trainer smooths only a model given \"labels\", not SQuAD's positions)");
    if (root.has("quantization")) c.quantization = quantization_config_from_json(root.section("quantization"), source);
    if (root.has("distillation")) {
        // Masked-LM logits cover the masked positions only, over the vocabulary: distilling them
        // is another design (which positions, whose vocabulary), not this one.
        if (c.data.task == TaskKind::mlm) root.fail("distillation", "is for data.task classification and squad, not mlm");
        c.distillation = distillation_settings_from_json(root.section("distillation"), source);
    }
    c.pipeline = pipeline_settings_from_json(root.section("pipeline"), source);
    root.finish();
    return c;
}

ScheduleOptions schedule_options(const TrainingSettings& t, int64_t total_steps) {
    return {t.lr_scheduler_type, t.learning_rate, t.warmup_steps, t.warmup_ratio, total_steps, t.lr_scheduler_kwargs};
}

}  // namespace qdq
