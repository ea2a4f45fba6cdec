// qdqtrain sweep: a sweep file's runs on this machine, or a Slurm script for them.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/cli.h"
#include "sweeps/sweep.h"
#include "sweeps/sweep_report.h"

namespace qdq::cli {

const char* const kSweepUsage =
    "usage: qdqtrain sweep SWEEP.json [--parallel N] [--slurm FILE [--ranks N]] [--results]\n";
const char* kSweepHelp =
    "Runs every run of the sweep that has not finished (an interrupted one resumes), then\n"
    "writes results.json and results.md (runs sorted by the sweep's metric; for pipelines also\n"
    "each stage's mean ± std over seeds, with plots) into its results_dir.\n"
    "The sweep file's format is described in sweeps/sweep.h.\n"
    "\n"
    "  --parallel N      runs at a time on this machine (overrides the file's \"parallel\")\n"
    "  --slurm FILE      write a Slurm job-array script (one array task per run) and run nothing\n"
    "  --ranks N         with --slurm: each run a data-parallel job of N tasks (srun; train only)\n"
    "  --results         only collect the results table of the runs done so far\n";

int run_sweep_command(int argc, char** argv) {
    std::string path, slurm;
    int parallel = 0, ranks = 1;
    bool results_only = false;
    for (int i = 2; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::printf("%s\n%s", kSweepUsage, kSweepHelp);
            return 0;
        }
        if (arg == "--parallel" || arg == "--slurm" || arg == "--ranks") {
            if (i + 1 >= argc) throw UsageError(arg + " needs a value");
            std::string value = argv[++i];
            if (arg == "--slurm") slurm = value;
            else if (arg == "--ranks") ranks = whole_number(arg, value);
            else parallel = whole_number(arg, value);
        } else if (arg == "--results") {
            results_only = true;
        } else if (arg.rfind("-", 0) == 0 || !path.empty()) {
            throw UsageError("unexpected argument " + arg);
        } else {
            path = arg;
        }
    }
    if (path.empty()) throw UsageError("missing SWEEP.json");
    if (ranks > 1 && slurm.empty()) throw UsageError("--ranks needs --slurm (on this machine, launch mpirun yourself)");
    Sweep sweep;
    try {
        sweep = load_sweep(path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "qdqtrain sweep: %s\n", e.what());
        return 2;
    }
    if (parallel > 0) sweep.parallel = parallel;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    if (!slurm.empty()) {
        std::ofstream out(slurm, std::ios::trunc);
        out << slurm_script(sweep, self, ranks);
        if (!out) throw std::runtime_error(slurm + ": cannot write");
        std::printf("wrote %s: %zu array tasks; submit it with sbatch\n", slurm.c_str(), sweep.runs.size());
        return 0;
    }
    // The tables are rewritten as each run finishes, so those of a sweep cut short are current.
    const int failed = results_only ? 0 : run_sweep(sweep, self, [&](const SweepRun&) {
        write_sweep_report(sweep, sweep_results(sweep));
    });
    const std::string report = write_sweep_report(sweep, sweep_results(sweep));
    std::printf("\n%s", report.c_str());
    return failed ? 1 : 0;
}

}  // namespace qdq::cli
