// A config written back as JSON (trainers/run_config.h run_config_to_json): every key, paths as
// they stand, so that run_config_from_json reads back the same config. run_config.cpp reads it.
#include "trainers/run_config.h"

#include "json/json_fields.h"
#include "qdqbert/calibration.h"
#include "trainers/qat_variant.h"

namespace qdq {

std::string calibration_choice_name(const std::optional<CalibrationMethod>& calibration) {
    return calibration ? calibration_method_name(*calibration) : "best";
}

namespace {

nlohmann::json report_to_names(const std::vector<ReportTo>& report_to) {
    nlohmann::json names = nlohmann::json::array();
    for (ReportTo integration : report_to) names.push_back(name_of_choice(integration, kReportToNames));
    return names;
}

nlohmann::json eval_files_json(const DataSettings& d) {
    if (d.eval_sets.empty()) return d.eval_files;
    nlohmann::json sets = nlohmann::json::object();
    for (const EvalSet& set : d.eval_sets) sets[set.name] = set.files;
    return sets;
}

nlohmann::json model_settings_to_json(const ModelSettings& m) {
    nlohmann::json config;
    if (m.config) config = nn::bert_config_to_json(*m.config);
    else if (!m.config_file.empty()) config = m.config_file;
    return {{"config", config}, {"init", m.init}};
}

nlohmann::json data_settings_to_json(const DataSettings& d) {
    nlohmann::json j = {{"task", name_of_choice(d.task, kTaskKindNames)},
                        {"dataset", name_of_choice(d.dataset, kClassificationDatasetNames)},
                        {"train_files", d.train_files}, {"eval_files", eval_files_json(d)},
                        {"data_dir", d.data_dir}, {"vocab", d.vocab},
                        {"do_lower_case", d.do_lower_case ? nlohmann::json(*d.do_lower_case) : nlohmann::json()},
                        {"max_seq_length", d.max_seq_length}, {"doc_stride", d.doc_stride},
                        {"max_train_examples", d.max_train_examples}, {"max_eval_examples", d.max_eval_examples},
                        {"squad_eval_fraction", d.squad_eval_fraction}, {"squad_split_seed", d.squad_split_seed},
                        {"mlm_probability", d.mlm_probability}};
    // Only when used: the configs of runs without a validation split stay as they were.
    if (d.validation_fraction > 0) {
        j["validation_fraction"] = d.validation_fraction;
        j["validation_seed"] = d.validation_seed;
    }
    return j;
}

nlohmann::json step_count_json(const StepCount& count) {
    return count.ratio > 0 ? nlohmann::json(count.ratio) : nlohmann::json(count.steps);
}

}  // namespace

nlohmann::json training_settings_to_json(const TrainingSettings& t) {
    nlohmann::json j = {
        {"output_dir", t.output_dir}, {"seed", t.seed},
        {"data_seed", t.data_seed ? nlohmann::json(*t.data_seed) : nlohmann::json()},
        {"per_device_train_batch_size", t.per_device_train_batch_size},
        {"per_device_eval_batch_size", t.per_device_eval_batch_size},
        {"gradient_accumulation_steps", t.gradient_accumulation_steps},
        {"num_train_epochs", t.num_train_epochs}, {"max_steps", t.max_steps},
        {"learning_rate", t.learning_rate}, {"weight_decay", t.weight_decay},
        {"adam_beta1", t.adam_beta1}, {"adam_beta2", t.adam_beta2}, {"adam_epsilon", t.adam_epsilon},
        {"max_grad_norm", t.max_grad_norm}, {"optim", t.optim},
        {"label_smoothing_factor", t.label_smoothing_factor},
        {"lr_scheduler_type", schedule_name(t.lr_scheduler_type)},
        {"lr_scheduler_kwargs", schedule_kwargs_to_json(t.lr_scheduler_kwargs)},
        {"warmup_steps", t.warmup_steps}, {"warmup_ratio", t.warmup_ratio},
        {"logging_steps", step_count_json(t.logging_steps)}, {"logging_first_step", t.logging_first_step},
        {"eval_steps", step_count_json(t.eval_steps)}, {"eval_delay", t.eval_delay},
        {"eval_on_start", t.eval_on_start},
        {"save_steps", step_count_json(t.save_steps)},
        {"save_total_limit", t.save_total_limit ? nlohmann::json(*t.save_total_limit) : nlohmann::json()},
        {"load_best_model_at_end", t.load_best_model_at_end},
        {"metric_for_best_model", t.metric_for_best_model},
        {"group_by_length", t.group_by_length}, {"dataloader_drop_last", t.dataloader_drop_last},
        {"save_only_model", t.save_only_model}, {"disable_tqdm", t.disable_tqdm}, {"bf16", t.bf16}, {"tf32", t.tf32},
        {"ddp_bucket_cap_mb", t.ddp_bucket_cap_mb},
        {"use_cpu", t.use_cpu}, {"report_to", report_to_names(t.report_to)}, {"logging_dir", t.logging_dir}};
    if (t.greater_is_better) j["greater_is_better"] = *t.greater_is_better;
    if (t.early_stopping_patience) {
        j["early_stopping_patience"] = *t.early_stopping_patience;
        j["early_stopping_threshold"] = t.early_stopping_threshold;
    }
    if (t.evaluation_strategy) j["evaluation_strategy"] = name_of_choice(*t.evaluation_strategy, kIntervalStrategyNames);
    if (t.save_strategy) j["save_strategy"] = name_of_choice(*t.save_strategy, kIntervalStrategyNames);
    if (t.logging_strategy) j["logging_strategy"] = name_of_choice(*t.logging_strategy, kIntervalStrategyNames);
    return j;
}

nlohmann::json pipeline_settings_to_json(const PipelineSettings& p) {
    nlohmann::json j = {{"qat_learning_rate_ratio", p.qat_learning_rate_ratio},
                        {"qat_num_train_epochs", p.qat_num_train_epochs},
                        {"calibration", calibration_choice_name(p.calibration)},
                        {"onnx_target", qdq_target_name(p.onnx_target)},
                        {"onnx", p.onnx},
                        {"onnx_threads", p.onnx_threads},
                        {"sensitivity", name_of_choice(p.sensitivity, kSensitivityNames)},
                        {"validation_fraction", p.validation_fraction},
                        {"accuracy_budget", p.accuracy_budget ? nlohmann::json(*p.accuracy_budget) : nlohmann::json()}};
    if (!p.qat_variants.empty()) j["qat_variants"] = qat_variants_to_json(p.qat_variants);
    return j;
}

nlohmann::json distillation_settings_to_json(const DistillationSettings& d) {
    nlohmann::json j = {{"temperature", d.temperature}, {"alpha", d.alpha}};
    if (!d.teacher.empty()) j["teacher"] = d.teacher;
    return j;
}

nlohmann::json run_config_to_json(const RunConfig& c) {
    nlohmann::json j = {{"model", model_settings_to_json(c.model)},
                        {"data", data_settings_to_json(c.data)},
                        {"training", training_settings_to_json(c.training)}};
    if (c.quantization) j["quantization"] = quantization_config_to_json(*c.quantization);
    if (c.distillation) j["distillation"] = distillation_settings_to_json(*c.distillation);
    j["pipeline"] = pipeline_settings_to_json(c.pipeline);
    return j;
}

}  // namespace qdq
