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
    data.read("do_lower_case", d.do_lower_case);
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

}  // namespace qdq
