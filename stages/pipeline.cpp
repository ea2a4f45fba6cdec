#include "stages/pipeline.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <vector>

#include "json/json_file.h"
#include "parallel/communicator.h"
#include "parallel/root_line.h"
#include "report/pipeline_report.h"
#include "stages/accuracy_budget.h"
#include "stages/calibrate.h"
#include "stages/export.h"
#include "stages/onnx_evaluation.h"
#include "trainers/qat_variant.h"
#include "trainers/resume.h"
#include "trainers/run_precision.h"
#include "trainers/sharded_evaluation.h"
#include "trainers/trainer.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

RunConfig stage(const RunConfig& config, const std::string& name) {
    RunConfig c = config;
    c.training.output_dir = (fs::path(config.training.output_dir) / name).string();
    // TensorBoard shows a folder as a run: each stage's events in a folder of its own.
    if (!c.training.logging_dir.empty()) c.training.logging_dir = (fs::path(config.training.logging_dir) / name).string();
    c.data.validation_fraction = config.pipeline.validation_fraction;
    // A finished stage keeps its model.h5, and checkpoints only where the config asks for them.
    if (!c.training.save_total_limit) c.training.save_total_limit = 0;
    return c;
}

// The stage's model.h5 evaluated afresh on the test set alone (the run itself evaluated on
// validation); kept in test_results.json, so that a rerun does not repeat it.
Metrics test_metrics(const RunConfig& stage) {
    const std::string dir = stage.training.output_dir, done = dir + "/test_results.json";
    if (fs::exists(done)) return metrics_from_json(read_json_file(done), "", done);
    RunConfig c = stage;
    c.model.init = dir + "/model.h5";
    c.data.validation_fraction = 0;
    c.distillation.reset();
    MatmulPrecisionGuard precision(eval_matmul_precision(c));
    std::unique_ptr<Task> task = make_task(c, {.train = false, .eval = true});
    const Metrics metrics = evaluate_on_ranks(*task, c.training.per_device_eval_batch_size);
    if (world().is_root()) write_json_file(done, metrics_to_json(metrics));
    return metrics;
}

// Whether the stage's output directory holds its finished model. Throws, as train() run again
// would, when that model is another config's (a key changed since): the results table would
// otherwise name this config beside that run's numbers. The model's config is compared as the
// stage saved it, since the task resolves it from model.init, which is not loaded yet.
bool finished_before(const RunConfig& config) {
    const std::string dir = config.training.output_dir, saved = dir + "/config.json";
    if (!fs::exists(dir + "/model.h5") || !fs::exists(dir + "/eval_results.json")) return false;
    if (!fs::exists(saved)) return true;
    RunConfig resolved = config;
    resolved.model.config = run_config_from_json(read_json_file(saved), saved).model.config;
    resolved.model.config_file.clear();
    finished_run_metrics(dir, resolved);
    return true;
}

// A calibration done before under other quantization settings is refused, as a stage trained
// under another config is.
void check_same_quantization(const QuantizationConfig& before, const QuantizationConfig& now, const std::string& file) {
    const nlohmann::json diff = nlohmann::json::diff(quantization_config_to_json(before), quantization_config_to_json(now));
    if (diff.empty()) return;
    throw std::runtime_error(file + ": was calibrated under different quantization settings (/quantization" +
                             diff[0].value("path", "?") + "); this config's would not be the ones its ranges came from. "
                             "Use a new training.output_dir, or remove the calibrate stage's folder to calibrate again");
}

// Trains `config` unless its output directory already holds the finished model. Returns the
// final metrics, or none when the run was interrupted.
std::optional<TestAndValidation> train_stage(const RunConfig& config, const char* name) {
    const std::string results = config.training.output_dir + "/eval_results.json";
    Metrics final_metrics;
    if (finished_before(config)) {
        root_line() << "pipeline: " << name << " done before (" << config.training.output_dir << ")\n";
        final_metrics = metrics_from_json(read_json_file(results), "", results);
    } else {
        root_line() << "pipeline: " << name << " -> " << config.training.output_dir << "\n";
        std::unique_ptr<Task> task = make_task(config, {true, true});
        TrainOutcome outcome = train(config, *task);
        if (outcome.status == TrainStatus::diverged) throw std::runtime_error(name + std::string(": ") + outcome.message);
        if (outcome.status == TrainStatus::interrupted) return std::nullopt;
        final_metrics = outcome.metrics;
    }
    if (config.data.validation_fraction == 0) return TestAndValidation{final_metrics, std::nullopt};
    return TestAndValidation{test_metrics(config), final_metrics};
}

// One QAT run of the pipeline: the plain one (variant empty) or a pipeline.qat_variants entry.
struct QatRun {
    std::string variant, label;  // label: "QAT" or "QAT <variant>", the stage's row
    std::string stage;           // its folder: qat or qat_<variant>
    RunConfig config;
};

// The plain QAT run, then each variant's, all from `init` and with the budget's float set.
std::vector<QatRun> qat_runs(const RunConfig& config, const std::string& init,
                             const std::optional<AccuracyBudgetResult>& budget) {
    std::vector<QatRun> runs = {{"", "QAT", "qat", qat_stage_config(config, init)}};
    for (const QatVariant& v : config.pipeline.qat_variants) {
        const std::string folder = "qat_" + v.name;
        runs.push_back({v.name, "QAT " + v.name, folder, qat_stage_config(qat_variant_config(config, v), init, folder)});
    }
    if (budget)
        for (QatRun& run : runs)
            for (const std::string& pattern : exact_name_patterns(budget->float_quantizers))
                run.config.quantization->disable.push_back(pattern);
    return runs;
}

// One model to export and evaluate in ONNX Runtime.
struct OnnxModel {
    const RunConfig& run;  // its stage's config: the quantizers it has
    std::string checkpoint;
    const char* file;
    std::string row;
    OnnxEvaluation& evaluation;
};

// The models as deployed: exported, then evaluated and timed in ONNX Runtime. `every` is the
// PTQ checkpoint QAT started from when an accuracy budget left quantizers in float (else
// empty): it is exported with every quantizer, for the float set's cost. The rows are kept in
// onnx/evaluation.json, so a rerun does not repeat them.
OnnxStage onnx_stage(const RunConfig& config, const RunConfig& fp32, const QatRun& qat, const RunConfig& calib,
                     const std::string& every, const std::string& every_method) {
    const std::string dir = config.training.output_dir + "/onnx", done = dir + "/evaluation.json";
    const std::string qat_checkpoint = qat.config.training.output_dir + "/model.h5";
    if (fs::exists(done)) {
        OnnxStage before = onnx_stage_from_json(read_json_file(done), "", done);
        // Files from before the checkpoint was kept are of the plain QAT run, the only one then.
        const bool same_qat = before.int8.checkpoint.empty() ? qat.variant.empty() : before.int8.checkpoint == qat_checkpoint;
        if (same_qat) {
            root_line() << "pipeline: onnx done before (" << dir << ")\n";
            return before;
        }
        root_line() << "pipeline: onnx evaluated " << (before.int8.checkpoint.empty() ? "the plain QAT run" : before.int8.checkpoint)
                    << " before; now " << qat.label << " is deployed\n";
    }
    fs::create_directories(dir);
    const QdqTarget target = config.pipeline.onnx_target;
    const std::string q_dq = std::string(qdq_target_name(target)) + " Q/DQ";
    OnnxEvaluationOptions options;
    options.batch_size = config.training.per_device_eval_batch_size;
    options.threads = config.pipeline.onnx_threads;
    // Scoring needs only the test set, which the models share: one task reads it once.
    RunConfig test = fp32;
    test.data.validation_fraction = 0;
    std::unique_ptr<Task> task = make_task(test, {.train = false, .weights = false});
    OnnxStage onnx;
    if (!every.empty()) onnx.int8_every.emplace();
    std::vector<OnnxModel> models = {
        {fp32, fp32.training.output_dir + "/model.h5", "model_fp32.onnx", "ONNX Runtime FP32", onnx.fp32},
        {qat.config, qat_checkpoint, "model_int8.onnx", "ONNX Runtime INT8, " + q_dq, onnx.int8}};
    if (!every.empty())
        models.push_back({calib, every, "model_int8_every.onnx",
                          "ONNX Runtime INT8 (PTQ " + every_method + ", every quantizer, " + q_dq + ")", *onnx.int8_every});
    for (const OnnxModel& m : models) {
        const std::string path = dir + "/" + m.file;
        root_line() << "pipeline: onnx -> " << path << "\n";
        export_task_onnx(m.run, m.checkpoint, path, target);
        // A quantized export's outputs against the framework's for its checkpoint: what a user
        // checks a deployment by. (The float export matches to float rounding, tests/test_onnx_tasks.cpp.)
        RunConfig model = m.run;
        model.data.validation_fraction = 0;
        const std::vector<NamedOutputs> framework =
            model.quantization ? framework_outputs(model, m.checkpoint, task->eval_inputs(options.batch_size))
                               : std::vector<NamedOutputs>{};
        m.evaluation = evaluate_onnx(*task, path, options, framework);
        m.evaluation.model = m.row;
        m.evaluation.file = path;
        m.evaluation.checkpoint = m.checkpoint;
    }
    write_json_file(done, onnx_stage_to_json(onnx));
    return onnx;
}

// The accuracy budget's search, kept in calibrate/budget.json so that a rerun does not repeat it.
AccuracyBudgetResult budget_stage(const RunConfig& calib, const CalibrationResult& calibration, const std::string& method,
                                  double budget) {
    const std::string done = calib.training.output_dir + "/budget.json";
    if (fs::exists(done)) {
        AccuracyBudgetResult r = accuracy_budget_from_json(read_json_file(done), "", done);
        if (r.budget == budget && r.method == method) return r;
    }
    root_line() << "pipeline: accuracy budget of " << budget << " points -> " << done << "\n";
    AccuracyBudgetResult r = fit_accuracy_budget(calib, calibration, method, budget);
    root_line() << "pipeline: " << r.float_quantizers.size() << " quantizers left in float, " << r.loss
               << " points below FP32" << (r.held ? "\n" : " (the budget does not hold with every sweep row in float)\n");
    if (world().is_root()) write_json_file(done, accuracy_budget_to_json(r));
    return r;
}

}  // namespace

size_t deployed_qat_run(const PipelineResults& results, const std::vector<bool>& exportable) {
    const std::string metric = shown_metrics(results.fp32.task).back();
    auto score = [&](size_t i) {
        const Metrics& test = i == 0 ? results.qat : results.qat_variants[i - 1].test;
        const std::optional<Metrics>& validation = i == 0 ? results.qat_validation : results.qat_variants[i - 1].validation;
        return (validation ? *validation : test).scores.at(metric);
    };
    size_t best = 0;
    for (size_t i = 1; i <= results.qat_variants.size(); ++i)
        if (exportable.at(i) && score(i) > score(best)) best = i;
    return best;
}

RunConfig fp32_stage_config(const RunConfig& config) {
    RunConfig c = stage(config, "fp32");
    c.quantization.reset();
    c.distillation.reset();  // distillation is QAT's: the float model is what a teacher teaches
    return c;
}

RunConfig calibrate_stage_config(const RunConfig& config) {
    RunConfig c = stage(config, "calibrate");
    c.model.init = fp32_stage_config(config).training.output_dir + "/model.h5";
    c.distillation.reset();  // calibration trains nothing: no teacher to load
    return c;
}

RunConfig qat_stage_config(const RunConfig& config, const std::string& calibration_checkpoint, const std::string& name) {
    RunConfig c = stage(config, name);
    c.model.init = calibration_checkpoint;
    if (c.distillation && c.distillation->teacher.empty())
        c.distillation->teacher = fs::absolute(fp32_stage_config(config).training.output_dir + "/model.h5").string();
    c.training.learning_rate = config.training.learning_rate * config.pipeline.qat_learning_rate_ratio;
    if (config.pipeline.qat_num_train_epochs > 0) {
        c.training.num_train_epochs = config.pipeline.qat_num_train_epochs;
        c.training.max_steps = -1;
    }
    return c;
}

PipelineOutcome run_pipeline(const RunConfig& config) {
    if (!config.quantization)
        throw ConfigError(config.source + ": the pipeline needs a \"quantization\" section");
    if (config.data.task == TaskKind::mlm) throw ConfigError(config.source + ": the pipeline fine-tunes a task, not mlm");
    if (config.pipeline.onnx) check_onnx_exportable(config);  // before hours of training, not after
    PipelineResults results{.config = config};

    const RunConfig fp32 = fp32_stage_config(config);
    std::optional<TestAndValidation> fp32_metrics = train_stage(fp32, "fp32");
    if (!fp32_metrics) return {false, results};
    results.fp32 = fp32_metrics->test;
    results.fp32_validation = fp32_metrics->validation;

    const RunConfig calib = calibrate_stage_config(config);
    const std::string calibration_json = calib.training.output_dir + "/calibration.json";
    if (fs::exists(calibration_json)) {
        results.calibration = calibration_result_from_json(read_json_file(calibration_json), "", calibration_json);
        check_same_quantization(results.calibration.quantization, *calib.quantization, calibration_json);
    } else {
        root_line() << "pipeline: calibrate -> " << calib.training.output_dir << "\n";
        std::unique_ptr<Task> task = make_task(calib, {true, true});
        CalibrateOptions options;
        options.sensitivity = config.pipeline.sensitivity;
        options.all_methods = true;  // the PTQ rows of the results table
        if (config.pipeline.calibration) options.sweep_method = calibration_method_name(*config.pipeline.calibration);
        results.calibration = calibrate(calib, *task, options);
    }
    results.qat_from =
        config.pipeline.calibration ? calibration_method_name(*config.pipeline.calibration) : results.calibration.best;
    const CalibratedMethod* method = find_method(results.calibration, results.qat_from);
    if (!method)
        throw ConfigError(config.source + ": pipeline.calibration: no calibration method '" + results.qat_from + "'");

    if (config.pipeline.accuracy_budget)
        results.budget = budget_stage(calib, results.calibration, results.qat_from, *config.pipeline.accuracy_budget);
    const bool float_set = results.budget && qat_takes_float_set(*results.budget, results.calibration);
    const std::vector<QatRun> qats =
        qat_runs(config, float_set ? results.budget->checkpoint : method->checkpoint, float_set ? results.budget : std::nullopt);
    for (const QatRun& run : qats) {
        std::optional<TestAndValidation> metrics = train_stage(run.config, run.stage.c_str());
        if (!metrics) return {false, results};
        if (&run == &qats.front()) {
            results.qat = metrics->test;
            results.qat_validation = metrics->validation;
        } else {
            results.qat_variants.push_back({run.variant, metrics->test, metrics->validation});
        }
    }
    std::vector<bool> exportable;
    for (const QatRun& run : qats) exportable.push_back(!config.pipeline.onnx || onnx_exportable(run.config));
    const QatRun& deployed = qats[deployed_qat_run(results, exportable)];
    results.deployed_qat = deployed.label;

    // The deployed models run in ONNX Runtime on rank 0 alone, which also writes the report.
    if (world().is_root()) {
        if (config.pipeline.onnx) {
            results.onnx = onnx_stage(config, fp32, deployed, calib, float_set ? method->checkpoint : "", results.qat_from);
        }
        write_pipeline_report(config, results);
    }
    barrier();
    return {true, results};
}

}  // namespace qdq
