// The config commands of qdqtrain (app/cli.h): each is handed the run config, already loaded
// with --set applied, and its own options.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>

#include "app/cli.h"
#include "json/json_fields.h"
#include "parallel/communicator.h"
#include "stages/calibrate.h"
#include "stages/export.h"
#include "stages/hf_export.h"
#include "stages/pipeline.h"
#include "trainers/checkpoint.h"
#include "trainers/run_precision.h"
#include "trainers/trainer.h"

namespace qdq::cli {

namespace {

void on_signal(int) { request_stop(); }

int run_train(const RunConfig& config, std::map<std::string, std::string>& options) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::unique_ptr<Task> task = make_task(config, {true, true});
    TrainOptions train_options;
    train_options.resume = !options.count("--no-resume");
    TrainOutcome outcome = train(config, *task, train_options);
    switch (outcome.status) {
        case TrainStatus::diverged:
            if (world().is_root()) std::fprintf(stderr, "qdqtrain: %s\n", outcome.message.c_str());
            return 3;
        case TrainStatus::interrupted:
            return 130;
        case TrainStatus::finished:
            if (world().is_root()) std::printf("%s\n", metrics_to_json(outcome.metrics).dump().c_str());
            return 0;
    }
    return 1;
}

void write_output(const nlohmann::json& result, std::map<std::string, std::string>& options) {
    if (!options.count("--out")) {
        std::printf("%s\n", result.dump(2).c_str());
        return;
    }
    std::ofstream out(options["--out"], std::ios::trunc);
    out << result.dump(2) << '\n';
    if (!out) throw std::runtime_error(options["--out"] + ": cannot write");
}

// The value of a flag that names one of `choices`, or `fallback` when the flag is absent.
template <typename E, typename Choices>
E option_choice(std::map<std::string, std::string>& options, const std::string& flag, E fallback, const Choices& choices) {
    if (!options.count(flag)) return fallback;
    if (std::optional<E> e = choice_named<E>(options[flag], choices)) return *e;
    throw UsageError(flag + " must be one of " + choice_names(choices) + "; got '" + options[flag] + "'");
}

// make_task's loader of --checkpoint's weights.
ModelLoader checkpoint_loader(std::map<std::string, std::string>& options) {
    return [path = options["--checkpoint"]](nn::Module& model) { load_model_weights(model, path); };
}

// The whole number under `flag` (whole_number), else `fallback` when it is absent.
int64_t option_count(std::map<std::string, std::string>& options, const std::string& flag, int64_t fallback) {
    return options.count(flag) ? whole_number(flag, options[flag]) : fallback;
}

int run_eval(const RunConfig& config, std::map<std::string, std::string>& options) {
    MatmulPrecisionGuard precision(eval_matmul_precision(config));
    const RunConfig for_checkpoint = config_for_checkpoint(config, options["--checkpoint"]);
    std::unique_ptr<Task> task = make_task(for_checkpoint, {.train = false}, checkpoint_loader(options));
    write_output(metrics_to_json(task->evaluate(config.training.per_device_eval_batch_size)), options);
    return 0;
}

int run_calibrate(const RunConfig& config, std::map<std::string, std::string>& options) {
    CalibrateOptions calibrate_options;
    calibrate_options.out_dir = options["--out"];
    if (std::filesystem::exists(calibrate_options.out_dir) && !std::filesystem::is_directory(calibrate_options.out_dir))
        throw UsageError("--out names a file, not a folder: " + calibrate_options.out_dir);
    RunConfig with_weights = config;
    if (!options["--checkpoint"].empty()) with_weights.model.init = options["--checkpoint"];
    calibrate_options.sensitivity =
        option_choice(options, "--sensitivity", Sensitivity::layers, kSensitivityNames);
    calibrate_options.all_methods = options.count("--all-methods") > 0;
    std::unique_ptr<Task> task = make_task(with_weights, {true, true});
    const CalibrationResult result = calibrate(with_weights, *task, calibrate_options);
    nlohmann::json summary = {
        {"fp32", metrics_to_json(result.fp32)}, {"best", result.best}, {"cost", calibration_cost_to_json(result.cost)}};
    for (const CalibratedMethod& m : result.methods) summary[m.name] = metrics_to_json(m.metrics);
    if (world().is_root()) std::printf("%s\n", summary.dump().c_str());
    return 0;
}

int run_pipeline(const RunConfig& config, std::map<std::string, std::string>&) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    PipelineOutcome outcome = run_pipeline(config);
    if (!outcome.finished) return 130;
    if (!world().is_root()) return 0;
    std::ifstream table(config.training.output_dir + "/results.md");
    std::cout << table.rdbuf();
    return 0;
}

int run_predict(const RunConfig& config, std::map<std::string, std::string>& options) {
    MatmulPrecisionGuard precision(eval_matmul_precision(config));
    const RunConfig for_checkpoint = config_for_checkpoint(config, options["--checkpoint"]);
    std::unique_ptr<Task> task =
        make_task(for_checkpoint, {.train = false, .eval = false}, checkpoint_loader(options));
    write_output(task->predict(options["--input"], config.training.per_device_eval_batch_size), options);
    return 0;
}

int run_export(const RunConfig& config, std::map<std::string, std::string>& options) {
    const QdqTarget target = option_choice(options, "--target", QdqTarget::TensorRT, kQdqTargetNames);
    const int64_t examples = option_count(options, "--check-examples", 16);
    check_onnx_exportable(config);
    nlohmann::json summary = export_task_onnx(config, options["--checkpoint"], options["--out"], target);
    if (options.count("--check"))
        summary["fidelity"] = check_exported_onnx(config, options["--checkpoint"], options["--out"], examples);
    std::printf("%s\n", summary.dump().c_str());
    return 0;
}

int run_save_pretrained(const RunConfig& config, std::map<std::string, std::string>& options) {
    std::printf("%s\n", save_task_pretrained(config, options["--checkpoint"], options["--out"]).dump().c_str());
    return 0;
}

const char* const kTrainUsage =
    "usage: qdqtrain train CONFIG [--set KEY=VALUE]... [--no-resume]\n";
const char* const kTrainHelp =
    "Trains as CONFIG says, writing into training.output_dir: config.json, metrics.jsonl,\n"
    "checkpoints, and at the end model.h5 and eval_results.json. A run whose output_dir\n"
    "holds checkpoints resumes from the newest one and reaches the same weights as a run\n"
    "never stopped. Ctrl-C (or SIGTERM) saves a checkpoint and exits with 130.\n"
    "\n"
    "  --no-resume       delete the output_dir's checkpoints, and the model.h5 and\n"
    "                    eval_results.json of a run finished there, and start from step 0\n";

const char* const kCalibrateUsage =
    "usage: qdqtrain calibrate CONFIG [--checkpoint PATH] [--out DIR] [--sensitivity MODE] [--all-methods]\n"
    "                          [--set KEY=VALUE]...\n";
const char* const kCalibrateHelp =
    "Post-training quantization. Attaches the quantizers of the config's \"quantization\"\n"
    "section to the fine-tuned float model, evaluates it, runs quantization.calibration_examples\n"
    "training examples through it once, and for quantization.calibrator (at\n"
    "quantization.percentile) reads the ranges, evaluates and writes DIR/<method>/ranges.h5 (the\n"
    "model.init of a QAT run: the ranges, over the float weights that DIR/model.h5 holds once).\n"
    "Also writes DIR/calibration.json and DIR/calibration_report.md with per-quantizer ranges,\n"
    "clipped fractions, SQNR, histograms and a sensitivity sweep.\n"
    "\n"
    "  --checkpoint PATH the float weights (default: model.init)\n"
    "  --out DIR         output directory (default: training.output_dir)\n"
    "  --sensitivity M   none, layers (default: each layer left in float in turn) or\n"
    "                    quantizers (each quantizer left in float in turn)\n"
    "  --all-methods     every method of the PTQ table: max, percentile 99.9, 99.99 and\n"
    "                    99.999, mse, entropy, from the same pass\n";

const char* const kPipelineUsage =
    "usage: qdqtrain pipeline CONFIG [--set KEY=VALUE]...\n";
const char* const kPipelineHelp =
    "Runs the whole path on one config: fine-tunes in FP32 (output_dir/fp32), calibrates by\n"
    "every method (calibrate/), fine-tunes with quantization from the best calibration at\n"
    "pipeline.qat_learning_rate_ratio of the learning rate (qat/), exports both models to\n"
    "ONNX and evaluates and times them in ONNX Runtime (onnx/), and writes results.md and\n"
    "results.json. Stages already done are skipped; an interrupted stage resumes.\n";

const char* const kEvalUsage =
    "usage: qdqtrain eval CONFIG --checkpoint PATH [--set KEY=VALUE]... [--out FILE]\n";
const char* const kEvalHelp =
    "Evaluates the weights of PATH (a checkpoint, model.h5, a .safetensors file or a\n"
    "Hugging Face directory) on the config's eval files and prints the metrics as JSON.\n"
    "\n"
    "  --checkpoint PATH the weights to evaluate (required)\n"
    "  --out FILE        write the metrics there instead of stdout\n";

const char* const kPredictUsage =
    "usage: qdqtrain predict CONFIG --checkpoint PATH --input FILE [--set KEY=VALUE]... [--out FILE]\n";
const char* const kPredictHelp =
    "Predicts for every example of FILE (read as the config's eval files are):\n"
    "classification writes [{\"id\", \"label\", \"label_name\", \"probabilities\"}] (label: the\n"
    "model's class id), SQuAD writes\n"
    "{\"question id\": \"answer\"} as the official evaluate-v1.1.py reads it.\n"
    "\n"
    "  --checkpoint PATH the weights to use (required)\n"
    "  --input FILE      the examples (required)\n"
    "  --out FILE        write the predictions there instead of stdout\n";

const char* const kExportUsage =
    "usage: qdqtrain export CONFIG --checkpoint PATH --out FILE [--target TARGET] [--check [--check-examples N]]\n"
    "                       [--set KEY=VALUE]...\n";
const char* const kExportHelp =
    "Writes the task model of CONFIG with the weights of PATH as an ONNX model (opset 13;\n"
    "inputs input_ids, attention_mask, token_type_ids, int64 [batch, sequence]; outputs\n"
    "logits, or start_logits and end_logits). With a \"quantization\" section the\n"
    "checkpoint's ranges (from 'qdqtrain calibrate' or a QAT run) become QuantizeLinear /\n"
    "DequantizeLinear pairs where the model quantizes, and nowhere else; without one the\n"
    "model is float. Only 8-bit signed quantizers with narrow_range false can be exported.\n"
    "\n"
    "  --checkpoint PATH the weights (required)\n"
    "  --out FILE        the ONNX file to write (required)\n"
    "  --target TARGET   tensorrt (default: int8 Q/DQ, zero point 0) or onnxruntime-cpu\n"
    "                    (uint8 activations, int8 weights: ORT's fast x86 kernels)\n"
    "  --check           run the first evaluation examples through the framework and through\n"
    "                    ONNX Runtime and compare every quantized tensor in quantization steps\n"
    "                    and the outputs (as ONNX defines the graph, and as ONNX Runtime's fused\n"
    "                    kernels read them): FILE.fidelity.md, summarised under \"fidelity\"\n"
    "  --check-examples N  how many of the evaluation examples --check runs (default 16,\n"
    "                    the longest first)\n";

const char* const kSavePretrainedUsage =
    "usage: qdqtrain save-pretrained CONFIG --checkpoint PATH --out DIR [--set KEY=VALUE]...\n";
const char* const kSavePretrainedHelp =
    "Writes the float task model of CONFIG with the weights of PATH as a Hugging Face\n"
    "directory: config.json, model.safetensors, vocab.txt (a byte-level BPE's vocab.json\n"
    "and merges.txt) and tokenizer_config.json, which transformers' from_pretrained and this\n"
    "project's model.init both load.\n"
    "\n"
    "  --checkpoint PATH the weights (required)\n"
    "  --out DIR         the directory to write (required)\n";

}  // namespace

int whole_number(const std::string& flag, const std::string& text) {
    constexpr int64_t kMost = std::numeric_limits<int>::max();
    size_t used = 0;
    int64_t n = 0;
    try {
        n = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size() || n < 1 || n > kMost)
        throw UsageError(flag + " must be a whole number from 1 to " + std::to_string(kMost) + "; got '" + text + "'");
    return (int)n;
}

const std::map<std::string, Command>& config_commands() {
    static const std::map<std::string, Command> table = {
        {"train", {kTrainUsage, kTrainHelp, {}, {"--no-resume"}, run_train}},
        {"calibrate",
         {kCalibrateUsage, kCalibrateHelp, {"--checkpoint", "--out", "--sensitivity"}, {"--all-methods"}, run_calibrate,
          {"--checkpoint", "--out", "--sensitivity"}}},
        {"pipeline", {kPipelineUsage, kPipelineHelp, {}, {}, run_pipeline}},
        {"eval", {kEvalUsage, kEvalHelp, {"--checkpoint", "--out"}, {}, run_eval}},
        {"predict", {kPredictUsage, kPredictHelp, {"--checkpoint", "--input", "--out"}, {}, run_predict}},
        {"export",
         {kExportUsage, kExportHelp, {"--checkpoint", "--out", "--target", "--check-examples"}, {"--check"}, run_export,
          {"--target", "--check-examples"}}},
        {"save-pretrained",
         {kSavePretrainedUsage, kSavePretrainedHelp, {"--checkpoint", "--out"}, {}, run_save_pretrained, {}}},
    };
    return table;
}

}  // namespace qdq::cli
