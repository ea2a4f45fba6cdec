#include "trainers/pipeline.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "trainers/calibrate.h"
#include "trainers/export.h"
#include "trainers/pipeline_report.h"
#include "trainers/trainer.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

RunConfig stage(const RunConfig& config, const std::string& name) {
    RunConfig c = config;
    c.training.output_dir = (fs::path(config.training.output_dir) / name).string();
    return c;
}

// Trains `config` unless its output directory already holds the finished model. Returns the
// final metrics, or null when the run was interrupted.
nlohmann::json train_stage(const RunConfig& config, const char* name) {
    const std::string results = config.training.output_dir + "/eval_results.json";
    if (fs::exists(config.training.output_dir + "/model.h5") && fs::exists(results)) {
        std::cerr << "pipeline: " << name << " done before (" << config.training.output_dir << ")\n";
        return read_json_file(results);
    }
    std::cerr << "pipeline: " << name << " -> " << config.training.output_dir << "\n";
    std::unique_ptr<Task> task = make_task(config, {true, true});
    TrainOptions options;
    options.progress_bar = isatty(STDERR_FILENO);
    TrainOutcome outcome = train(config, *task, options);
    if (outcome.status == TrainStatus::diverged) throw std::runtime_error(name + std::string(": ") + outcome.message);
    if (outcome.status == TrainStatus::interrupted) return nullptr;
    return outcome.metrics;
}

}  // namespace

RunConfig fp32_stage_config(const RunConfig& config) {
    RunConfig c = stage(config, "fp32");
    c.quantization = nullptr;
    return c;
}

RunConfig calibrate_stage_config(const RunConfig& config) {
    RunConfig c = stage(config, "calibrate");
    c.model.init = fp32_stage_config(config).training.output_dir + "/model.h5";
    return c;
}

RunConfig qat_stage_config(const RunConfig& config, const std::string& calibration_checkpoint) {
    RunConfig c = stage(config, "qat");
    c.model.init = calibration_checkpoint;
    c.training.learning_rate = config.training.learning_rate * config.pipeline.qat_learning_rate_ratio;
    if (config.pipeline.qat_num_train_epochs > 0) {
        c.training.num_train_epochs = config.pipeline.qat_num_train_epochs;
        c.training.max_steps = -1;
    }
    return c;
}

PipelineOutcome run_pipeline(const RunConfig& config) {
    if (config.quantization.is_null())
        throw std::runtime_error(config.source + ": the pipeline needs a \"quantization\" section");
    if (config.data.task == "mlm") throw std::runtime_error(config.source + ": the pipeline fine-tunes a task, not mlm");
    if (config.pipeline.onnx) check_onnx_exportable(config);  // before hours of training, not after
    nlohmann::json results = {{"config", run_config_to_json(config)}};

    const RunConfig fp32 = fp32_stage_config(config);
    results["fp32"] = train_stage(fp32, "fp32");
    if (results["fp32"].is_null()) return {false, results};

    const RunConfig calib = calibrate_stage_config(config);
    const std::string calibration_json = calib.training.output_dir + "/calibration.json";
    if (!fs::exists(calibration_json)) {
        std::cerr << "pipeline: calibrate -> " << calib.training.output_dir << "\n";
        std::unique_ptr<Task> task = make_task(calib, {true, true});
        calibrate(calib, *task, {.sensitivity = sensitivity_from_name(config.pipeline.sensitivity)});
    }
    results["calibration"] = read_json_file(calibration_json);
    std::string method = config.pipeline.calibration == "best" ? results["calibration"]["best"].get<std::string>()
                                                               : config.pipeline.calibration;
    std::string checkpoint;
    for (const auto& m : results["calibration"]["methods"])
        if (m["method"] == method) checkpoint = m["checkpoint"];
    if (checkpoint.empty())
        throw std::runtime_error(config.source + ": pipeline.calibration: no calibration method '" + method + "'");
    results["qat_from"] = method;

    const RunConfig qat = qat_stage_config(config, checkpoint);
    results["qat"] = train_stage(qat, "qat");
    if (results["qat"].is_null()) return {false, results};

    if (config.pipeline.onnx) {
        // Both models as deployed; evaluating them in ONNX Runtime from here is still to come
        // (tests/test_onnx_tasks.cpp does it for the export itself).
        const std::string dir = config.training.output_dir + "/onnx";
        fs::create_directories(dir);
        const QdqTarget target =
            config.pipeline.onnx_target == "tensorrt" ? QdqTarget::TensorRT : QdqTarget::OnnxRuntimeCpu;
        results["onnx_files"] = {
            export_task_onnx(fp32, fp32.training.output_dir + "/model.h5", dir + "/model_fp32.onnx", target),
            export_task_onnx(qat, qat.training.output_dir + "/model.h5", dir + "/model_int8.onnx", target)};
    }

    // One flat object of every stage's metrics, for sweeps over pipelines (trainers/sweep.h).
    nlohmann::json summary;
    auto add = [&](const std::string& prefix, const nlohmann::json& metrics) {
        for (const auto& [name, value] : metrics.items())
            if (value.is_number()) summary[prefix + name] = value;
    };
    add("fp32_", results["fp32"]);
    for (const auto& m : results["calibration"]["methods"])
        if (m["method"] == method) add("ptq_", m["metrics"]);
    add("qat_", results["qat"]);
    results["summary"] = summary;
    write_pipeline_report(config, results);
    return {true, results};
}

}  // namespace qdq
