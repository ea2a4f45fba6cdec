// qdqtrain: the command-line entry point. Most subcommands read a run config
// (trainers/run_config.h) with --set overrides and hand it to the trainer or a task; sweep reads
// a sweep file, curves a run's folder, and selftest nothing.
//
// Exit codes, for scripts: 0 done; 1 failed while running (unreadable data, I/O); 2 bad usage or
// a bad config (the message names the key); 3 training diverged (NaN/Inf); 77 selftest found no
// device; 130 stopped by SIGINT/SIGTERM after writing a checkpoint that resumes the run.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "app/cli.h"
#include "autograd/cpu_level.h"
#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "cuda/backend.h"
#include "onnx/onnx_runtime.h"
#include "parallel/communicator.h"
#include "report/training_curves.h"
#include "stages/selftest.h"
#include "trainers/progress_bar.h"

namespace {

using qdq::cli::Command;
using qdq::cli::UsageError;

const char* kUsage =
    "usage: qdqtrain <command> [options]\n"
    "\n"
    "Trains BERT-family encoders in FP32, calibrates and fine-tunes them with fake\n"
    "quantization, and exports INT8 ONNX models.\n"
    "\n"
    "commands:\n"
    "  train CONFIG      fine-tune or pretrain as the config says; resumes an interrupted run\n"
    "  calibrate CONFIG  post-training quantization of a fine-tuned model (--all-methods: six)\n"
    "  pipeline CONFIG   fine-tune, calibrate, QAT and export; writes the results table\n"
    "  eval CONFIG       evaluate a checkpoint on the config's eval set\n"
    "  predict CONFIG    write predictions for a file (class labels, or SQuAD answers)\n"
    "  sweep SWEEP       run a grid or random search over config keys, one run directory each\n"
    "  curves RUN_DIR    plot a run's training loss and evaluation metrics (SVG)\n"
    "  export CONFIG     write a checkpoint as an ONNX model (float, or QDQ when quantized)\n"
    "  save-pretrained CONFIG  write a checkpoint as a Hugging Face directory\n"
    "  selftest          check the CUDA backend against the CPU on this machine's GPU (run it first)\n"
    "\n"
    "options:\n"
    "  --version         print the version, the CPU level (QDQ_CPU caps it), the GEMM backends\n"
    "                    (FP32, bf16), the CUDA status and ONNX Runtime's integer kernels\n"
    "  --help            print this help; 'qdqtrain <command> --help' for a command's\n"
    "\n"
    "exit codes: 0 done, 1 failed, 2 bad usage or config, 3 diverged, 77 no GPU for selftest,\n"
    "130 interrupted\n";

const char* kSetHelp =
    "  --set KEY=VALUE   override a config key (dotted path, e.g. training.learning_rate=3e-5;\n"
    "                    the value is JSON, or a bare string); repeatable\n";

const char* kSelftestUsage =
    "usage: qdqtrain selftest\n"
    "\n"
    "Runs every CUDA kernel of the backend on this machine's GPU against the CPU, then three\n"
    "BERT training steps on both, and says which check disagrees; again under compute-sanitizer\n"
    "when it is installed. Exit 0 when all agree, 1 when one does not or the sanitizer reports\n"
    "or the GPU cannot be used (a driver older than the CUDA runtime, named with its error), 77\n"
    "without a CUDA device.\n";

const char* kCurvesUsage =
    "usage: qdqtrain curves RUN_DIR [PREFIX] [--tokens]\n"
    "writes PREFIX_loss.svg (and PREFIX_eval.svg) from RUN_DIR/metrics.jsonl;\n"
    "PREFIX defaults to RUN_DIR/curves; --tokens plots against the input\n"
    "tokens seen instead of the step\n";

bool is_help(const char* arg) { return std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0; }

bool contains(const std::vector<std::string>& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
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
        return qdq::abort_world(2);
    }
    if (qdq::world().size > 1 && name != "train" && name != "calibrate" && name != "pipeline")
        throw std::runtime_error("runs in one process: under mpirun only 'train', 'calibrate' and 'pipeline' are data parallel");
    // Progress bars on a terminal, drawn by rank 0 alone (the other ranks' stderr may be one
    // too), unless training.disable_tqdm says none.
    qdq::set_progress_bars_shown(isatty(STDERR_FILENO) && qdq::world().is_root() && !config.training.disable_tqdm);
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
            std::printf("cpu: %s\n", qdq::cpu_level_description().c_str());
            std::printf("gemm: %s\n", qdq::gemm_backend_description().c_str());
            std::printf("gemm_bf16: %s\n", qdq::bf16_kernel_description().c_str());
            std::printf("cuda: %s\n", qdq::cuda::device_description().c_str());
            std::printf("onnxruntime: %s\n", qdq::onnxruntime_integer_kernels().c_str());
            return 0;
        }
        if (name == "selftest") {
            if (argc == 3 && is_help(argv[2])) return std::fputs(kSelftestUsage, stdout) >= 0 ? 0 : 1;
            if (argc > 2) {
                std::fprintf(stderr, "qdqtrain selftest: unexpected argument %s\n%s", argv[2], kSelftestUsage);
                return 2;
            }
            return qdq::run_selftest(std::cout, argv[0]);
        }
        if (name == "curves") {
            // Not a config command: it reads a finished (or running) run directory.
            std::vector<std::string> args(argv + 2, argv + argc);
            if (args.size() == 1 && is_help(args[0].c_str())) return std::fputs(kCurvesUsage, stdout) >= 0 ? 0 : 1;
            const bool by_tokens = std::erase(args, std::string("--tokens")) > 0;
            if (args.empty() || args.size() > 2 || args[0][0] == '-') {
                std::fputs(kCurvesUsage, stderr);
                return 2;
            }
            qdq::write_training_curves(args[0], args.size() == 2 ? args[1] : args[0] + "/curves", by_tokens);
            return 0;
        }
        if (name == "sweep") {
            if (qdq::launched_by_mpi()) {
                std::fprintf(stderr, "qdqtrain sweep: runs in one process, not under mpirun (--slurm --ranks N makes "
                                     "data-parallel runs)\n");
                return 2;
            }
            try {
                return qdq::cli::run_sweep_command(argc, argv);
            } catch (const UsageError& e) {
                std::fprintf(stderr, "qdqtrain sweep: %s\n%s", e.what(), qdq::cli::kSweepUsage);
                return 2;
            }
        }
        auto found = qdq::cli::config_commands().find(name);
        if (found == qdq::cli::config_commands().end()) {
            std::fprintf(stderr, "qdqtrain: unknown command '%s'\n\n%s", name.c_str(), kUsage);
            return 2;
        }
        try {
            return run_command(name, found->second, argc, argv);
        } catch (const UsageError& e) {
            std::fprintf(stderr, "qdqtrain %s: %s\n%s", name.c_str(), e.what(), found->second.usage);
            return 2;
        }
    } catch (const qdq::ConfigError& e) {
        std::fprintf(stderr, "qdqtrain %s: %s\n", name.c_str(), e.what());
        return qdq::abort_world(2);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qdqtrain %s: %s\n", name.c_str(), e.what());
        return qdq::abort_world(1);
    }
}
