// qdqtrain: the command-line entry point. Each subcommand reads a run config (trainers/run_config.h)
// with --set overrides and hands it to the trainer or a task.
//
// Exit codes, for scripts: 0 done; 1 failed while running (unreadable data, I/O); 2 bad usage or
// a bad config (the message names the key); 3 training diverged (NaN/Inf); 130 stopped by
// SIGINT/SIGTERM after writing a checkpoint that resumes the run.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "cuda/backend.h"
#include "json/json_fields.h"
#include "trainers/calibrate.h"
#include "trainers/checkpoint.h"
#include "trainers/pipeline.h"
#include "trainers/run_precision.h"
#include "trainers/export.h"
#include "trainers/hf_export.h"
#include "trainers/sweep.h"
#include "trainers/sweep_report.h"
#include "trainers/trainer.h"
#include "trainers/training_curves.h"

namespace {

const char* kUsage =
    "usage: qdqtrain <command> [options]\n"
    "\n"
    "Trains BERT-family encoders in FP32, calibrates and fine-tunes them with fake\n"
    "quantization, and exports INT8 ONNX models.\n"
    "\n"
    "commands:\n"
    "  train CONFIG      fine-tune or pretrain as the config says; resumes an interrupted run\n"
    "  calibrate CONFIG  post-training quantization of a fine-tuned model, every method at once\n"
    "  pipeline CONFIG   fine-tune, calibrate, QAT and export; writes the results table\n"
    "  eval CONFIG       evaluate a checkpoint on the config's eval set\n"
    "  predict CONFIG    write predictions for a file (class labels, or SQuAD answers)\n"
    "  sweep SWEEP       run a grid or random search over config keys, one run directory each\n"
    "  curves RUN_DIR    plot a run's training loss and evaluation metrics (SVG)\n"
    "  export CONFIG     write a checkpoint as an ONNX model (float, or QDQ when quantized)\n"
    "  save-pretrained CONFIG  write a checkpoint as a Hugging Face directory\n"
    "\n"
    "options:\n"
    "  --version         print the version, the GEMM backends (FP32, bf16) and the CUDA status\n"
    "  --help            print this help; 'qdqtrain <command> --help' for a command's\n"
    "\n"
    "exit codes: 0 done, 1 failed, 2 bad usage or config, 3 diverged, 130 interrupted\n";

const char* kSetHelp =
    "  --set KEY=VALUE   override a config key (dotted path, e.g. training.learning_rate=3e-5;\n"
    "                    the value is JSON, or a bare string); repeatable\n";

struct Command {
    const char* usage;
    const char* help;
    std::vector<std::string> value_options;  // options that take a value (besides --set)
    std::vector<std::string> flags;
    std::function<int(const qdq::RunConfig&, std::map<std::string, std::string>&)> run;
    std::vector<std::string> optional = {"--out"};  // value options that may be left out
};

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void on_signal(int) { qdq::request_stop(); }

int run_train(const qdq::RunConfig& config, std::map<std::string, std::string>& options) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::unique_ptr<qdq::Task> task = qdq::make_task(config, {true, true});
    qdq::TrainOptions train_options;
    train_options.resume = !options.count("--no-resume");
    train_options.progress_bar = isatty(STDERR_FILENO);
    qdq::TrainOutcome outcome = qdq::train(config, *task, train_options);
    switch (outcome.status) {
        case qdq::TrainStatus::diverged:
            std::fprintf(stderr, "qdqtrain: %s\n", outcome.message.c_str());
            return 3;
        case qdq::TrainStatus::interrupted:
            return 130;
        case qdq::TrainStatus::finished:
            std::printf("%s\n", outcome.metrics.dump().c_str());
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
    if (std::optional<E> e = qdq::choice_named<E>(options[flag], choices)) return *e;
    throw UsageError(flag + " must be one of " + qdq::choice_names(choices) + "; got '" + options[flag] + "'");
}

int run_eval(const qdq::RunConfig& config, std::map<std::string, std::string>& options) {
    qdq::MatmulPrecisionGuard precision(qdq::run_matmul_precision(config.training));
    std::unique_ptr<qdq::Task> task = qdq::make_task(config, {.train = false, .weights = false});
    qdq::load_model_weights(task->model(), options["--checkpoint"]);
    write_output(task->evaluate(config.training.per_device_eval_batch_size), options);
    return 0;
}

int run_calibrate(const qdq::RunConfig& config, std::map<std::string, std::string>& options) {
    qdq::CalibrateOptions calibrate_options;
    calibrate_options.out_dir = options["--out"];
    qdq::RunConfig with_weights = config;
    if (!options["--checkpoint"].empty()) with_weights.model.init = options["--checkpoint"];
    calibrate_options.sensitivity =
        option_choice(options, "--sensitivity", qdq::Sensitivity::layers, qdq::kSensitivityNames);
    calibrate_options.all_methods = options.count("--all-methods") > 0;
    std::unique_ptr<qdq::Task> task = qdq::make_task(with_weights, {true, true});
    nlohmann::json result = qdq::calibrate(with_weights, *task, calibrate_options);
    nlohmann::json summary = {{"fp32", result["fp32"]}, {"best", result["best"]}, {"cost", result["cost"]}};
    for (const auto& m : result["methods"]) summary[m["method"].get<std::string>()] = m["metrics"];
    std::printf("%s\n", summary.dump().c_str());
    return 0;
}

int run_pipeline(const qdq::RunConfig& config, std::map<std::string, std::string>&) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    qdq::PipelineOutcome outcome = qdq::run_pipeline(config);
    if (!outcome.finished) return 130;
    std::ifstream table(config.training.output_dir + "/results.md");
    std::cout << table.rdbuf();
    return 0;
}

int run_predict(const qdq::RunConfig& config, std::map<std::string, std::string>& options) {
    qdq::MatmulPrecisionGuard precision(qdq::run_matmul_precision(config.training));
    std::unique_ptr<qdq::Task> task = qdq::make_task(config, {.train = false, .eval = false, .weights = false});
    qdq::load_model_weights(task->model(), options["--checkpoint"]);
    write_output(task->predict(options["--input"], config.training.per_device_eval_batch_size), options);
    return 0;
}

int run_export(const qdq::RunConfig& config, std::map<std::string, std::string>& options) {
    const qdq::QdqTarget target = option_choice(options, "--target", qdq::QdqTarget::TensorRT, qdq::kQdqTargetNames);
    try {
        qdq::check_onnx_exportable(config);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qdqtrain export: %s\n", e.what());
        return 2;
    }
    std::printf("%s\n", qdq::export_task_onnx(config, options["--checkpoint"], options["--out"], target).dump().c_str());
    return 0;
}

int run_save_pretrained(const qdq::RunConfig& config, std::map<std::string, std::string>& options) {
    std::printf("%s\n", qdq::save_task_pretrained(config, options["--checkpoint"], options["--out"]).dump().c_str());
    return 0;
}

const std::map<std::string, Command>& commands() {
    static const std::map<std::string, Command> table = {
        {"train",
         {"usage: qdqtrain train CONFIG [--set KEY=VALUE]... [--no-resume]\n",
          "Trains as CONFIG says, writing into training.output_dir: config.json, metrics.jsonl,\n"
          "checkpoints, and at the end model.h5 and eval_results.json. A run whose output_dir\n"
          "holds checkpoints resumes from the newest one and reaches the same weights as a run\n"
          "never stopped. Ctrl-C (or SIGTERM) saves a checkpoint and exits with 130.\n"
          "\n"
          "  --no-resume       delete the output_dir's checkpoints and start from step 0\n",
          {},
          {"--no-resume"},
          run_train}},
        {"calibrate",
         {"usage: qdqtrain calibrate CONFIG [--checkpoint PATH] [--out DIR] [--sensitivity MODE] [--all-methods]\n"
          "                          [--set KEY=VALUE]...\n",
          "Post-training quantization. Attaches the quantizers of the config's \"quantization\"\n"
          "section to the fine-tuned float model, evaluates it, runs quantization.calibration_examples\n"
          "training examples through it once, and for quantization.calibrator (at\n"
          "quantization.percentile) reads the ranges, evaluates and writes DIR/<method>/model.h5 (the\n"
          "model.init of a QAT run). Also writes DIR/calibration.json and DIR/calibration_report.md\n"
          "with per-quantizer ranges, clipped fractions, SQNR, histograms and a sensitivity sweep.\n"
          "\n"
          "  --checkpoint PATH the float weights (default: model.init)\n"
          "  --out DIR         output directory (default: training.output_dir)\n"
          "  --sensitivity M   none, layers (default: each layer left in float in turn) or\n"
          "                    quantizers (each quantizer left in float in turn)\n"
          "  --all-methods     every method of the PTQ table: max, percentile 99.9, 99.99 and\n"
          "                    99.999, mse, entropy, from the same pass\n",
          {"--checkpoint", "--out", "--sensitivity"},
          {"--all-methods"},
          run_calibrate,
          {"--checkpoint", "--out", "--sensitivity"}}},
        {"pipeline",
         {"usage: qdqtrain pipeline CONFIG [--set KEY=VALUE]...\n",
          "Runs the whole path on one config: fine-tunes in FP32 (output_dir/fp32), calibrates by\n"
          "every method (calibrate/), fine-tunes with quantization from the best calibration at\n"
          "pipeline.qat_learning_rate_ratio of the learning rate (qat/), exports both models to\n"
          "ONNX and evaluates and times them in ONNX Runtime (onnx/), and writes results.md and\n"
          "results.json. Stages already done are skipped; an interrupted stage resumes.\n",
          {},
          {},
          run_pipeline}},
        {"eval",
         {"usage: qdqtrain eval CONFIG --checkpoint PATH [--set KEY=VALUE]... [--out FILE]\n",
          "Evaluates the weights of PATH (a checkpoint, model.h5, a .safetensors file or a\n"
          "Hugging Face directory) on the config's eval files and prints the metrics as JSON.\n"
          "\n"
          "  --checkpoint PATH the weights to evaluate (required)\n"
          "  --out FILE        write the metrics there instead of stdout\n",
          {"--checkpoint", "--out"},
          {},
          run_eval}},
        {"predict",
         {"usage: qdqtrain predict CONFIG --checkpoint PATH --input FILE [--set KEY=VALUE]... [--out FILE]\n",
          "Predicts for every example of FILE (read as the config's eval files are):\n"
          "classification writes [{\"id\", \"label\", \"probabilities\"}], SQuAD writes\n"
          "{\"question id\": \"answer\"} as the official evaluate-v1.1.py reads it.\n"
          "\n"
          "  --checkpoint PATH the weights to use (required)\n"
          "  --input FILE      the examples (required)\n"
          "  --out FILE        write the predictions there instead of stdout\n",
          {"--checkpoint", "--input", "--out"},
          {},
          run_predict}},
        {"export",
         {"usage: qdqtrain export CONFIG --checkpoint PATH --out FILE [--target TARGET] [--set KEY=VALUE]...\n",
          "Writes the task model of CONFIG with the weights of PATH as an ONNX model (opset 13;\n"
          "inputs input_ids, attention_mask, token_type_ids, int64 [batch, sequence]; outputs\n"
          "logits, or start_logits and end_logits). With a \"quantization\" section the\n"
          "checkpoint's ranges (from 'qdqtrain calibrate' or a QAT run) become QuantizeLinear /\n"
          "DequantizeLinear pairs where the model quantizes, and nowhere else; without one the\n"
          "model is float. Only 8-bit quantizers with narrow_range false can be exported.\n"
          "\n"
          "  --checkpoint PATH the weights (required)\n"
          "  --out FILE        the ONNX file to write (required)\n"
          "  --target TARGET   tensorrt (default: int8 Q/DQ, zero point 0) or onnxruntime-cpu\n"
          "                    (uint8 activations, int8 weights: ORT's fast x86 kernels)\n",
          {"--checkpoint", "--out", "--target"},
          {},
          run_export,
          {"--target"}}},
        {"save-pretrained",
         {"usage: qdqtrain save-pretrained CONFIG --checkpoint PATH --out DIR [--set KEY=VALUE]...\n",
          "Writes the float task model of CONFIG with the weights of PATH as a Hugging Face\n"
          "directory: config.json, model.safetensors, vocab.txt and tokenizer_config.json, which\n"
          "transformers' from_pretrained and this project's model.init both load.\n"
          "\n"
          "  --checkpoint PATH the weights (required)\n"
          "  --out DIR         the directory to write (required)\n",
          {"--checkpoint", "--out"},
          {},
          run_save_pretrained,
          {}}},
    };
    return table;
}

bool contains(const std::vector<std::string>& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
}

const char* kSweepUsage = "usage: qdqtrain sweep SWEEP.json [--parallel N] [--slurm FILE] [--results]\n";
const char* kSweepHelp =
    "Runs every run of the sweep that has not finished (an interrupted one resumes), then\n"
    "writes results.json and results.md (runs sorted by the sweep's metric; for pipelines also\n"
    "each stage's mean ± std over seeds, with plots) into its results_dir.\n"
    "The sweep file's format is described in trainers/sweep.h.\n"
    "\n"
    "  --parallel N      runs at a time on this machine (overrides the file's \"parallel\")\n"
    "  --slurm FILE      write a Slurm job-array script (one array task per run) and run nothing\n"
    "  --results         only collect the results table of the runs done so far\n";

int run_sweep_command(int argc, char** argv) {
    std::string path, slurm;
    int parallel = 0;
    bool results_only = false;
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::printf("%s\n%s", kSweepUsage, kSweepHelp);
            return 0;
        }
        if (arg == "--parallel" || arg == "--slurm") {
            if (i + 1 >= argc) throw UsageError(arg + " needs a value");
            std::string value = argv[++i];
            if (arg == "--slurm") slurm = value;
            else if ((parallel = std::atoi(value.c_str())) < 1) throw UsageError("--parallel needs a positive number");
        } else if (arg == "--results") {
            results_only = true;
        } else if (arg.rfind("-", 0) == 0 || !path.empty()) {
            throw UsageError("unexpected argument " + arg);
        } else {
            path = arg;
        }
    }
    if (path.empty()) throw UsageError("missing SWEEP.json");
    qdq::Sweep sweep;
    try {
        sweep = qdq::load_sweep(path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qdqtrain sweep: %s\n", e.what());
        return 2;
    }
    if (parallel > 0) sweep.parallel = parallel;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    if (!slurm.empty()) {
        std::ofstream out(slurm, std::ios::trunc);
        out << qdq::slurm_script(sweep, self);
        if (!out) throw std::runtime_error(slurm + ": cannot write");
        std::printf("wrote %s: %zu array tasks; submit it with sbatch\n", slurm.c_str(), sweep.runs.size());
        return 0;
    }
    const int failed = results_only ? 0 : qdq::run_sweep(sweep, self);
    const std::string report = qdq::write_sweep_report(sweep, qdq::sweep_results(sweep));
    std::printf("\n%s", report.c_str());
    return failed ? 1 : 0;
}

int run_command(const std::string& name, const Command& command, int argc, char** argv) {
    std::string config_path;
    std::vector<std::string> overrides;
    std::map<std::string, std::string> options;
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::printf("%s\n%s%s", command.usage, command.help, kSetHelp);
            return 0;
        }
        if (arg == "--set" || contains(command.value_options, arg)) {
            if (i + 1 >= argc) throw UsageError(arg + " needs a value");
            std::string value = argv[++i];
            if (arg == "--set") overrides.push_back(value);
            else options[arg] = value;
        } else if (contains(command.flags, arg)) {
            options[arg] = "";
        } else if (arg.rfind("-", 0) == 0) {
            throw UsageError("unknown option " + arg);
        } else if (config_path.empty()) {
            config_path = arg;
        } else {
            throw UsageError("unexpected argument " + arg);
        }
    }
    if (config_path.empty()) throw UsageError("missing CONFIG");
    for (const std::string& required : command.value_options)
        if (!contains(command.optional, required) && !options.count(required)) throw UsageError("missing " + required);

    qdq::RunConfig config;
    try {
        config = qdq::load_run_config(config_path, overrides);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qdqtrain %s: %s\n", name.c_str(), e.what());
        return 2;
    }
    return command.run(config, options);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const std::string name = argv[1];
    try {
        if (name == "--version") {
            std::printf("qdqtrain %s\n", QDQ_VERSION);
            std::printf("gemm: %s\n", qdq::gemm_backend_description().c_str());
            std::printf("gemm_bf16: %s\n", qdq::bf16_kernel_description().c_str());
            std::printf("cuda: %s\n", qdq::cuda::device_description().c_str());
            return 0;
        }
        if (name == "curves") {
            // Not a config command: it reads a finished (or running) run directory.
            std::vector<std::string> args(argv + 2, argv + argc);
            const bool by_tokens = std::erase(args, std::string("--tokens")) > 0;
            if (args.empty() || args.size() > 2 || args[0][0] == '-') {
                std::fprintf(stderr, "usage: qdqtrain curves RUN_DIR [PREFIX] [--tokens]\n"
                                     "writes PREFIX_loss.svg (and PREFIX_eval.svg) from RUN_DIR/metrics.jsonl;\n"
                                     "PREFIX defaults to RUN_DIR/curves; --tokens plots against the input\n"
                                     "tokens seen instead of the step\n");
                return 2;
            }
            qdq::write_training_curves(args[0], args.size() == 2 ? args[1] : args[0] + "/curves", by_tokens);
            return 0;
        }
        if (name == "sweep") {
            try {
                return run_sweep_command(argc, argv);
            } catch (const UsageError& e) {
                std::fprintf(stderr, "qdqtrain sweep: %s\n%s", e.what(), kSweepUsage);
                return 2;
            }
        }
        auto found = commands().find(name);
        if (found == commands().end()) {
            std::fprintf(stderr, "qdqtrain: unknown command '%s'\n\n%s", name.c_str(), kUsage);
            return 2;
        }
        try {
            return run_command(name, found->second, argc, argv);
        } catch (const UsageError& e) {
            std::fprintf(stderr, "qdqtrain %s: %s\n%s", name.c_str(), e.what(), found->second.usage);
            return 2;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qdqtrain %s: %s\n", name.c_str(), e.what());
        return 1;
    }
}
