// Hyperparameter sweeps: one run config, many variations of it, each run in its own directory.
//
// SWEEP.json:
//   {"config": "imdb.json",             base run config, relative to the sweep file
//    "output_dir": "runs/sweep",        run directories go in here: run-000, run-001, ...
//    "results_dir": "experiments/results/imdb",  where the tables go (default: output_dir);
//                                       sweeps/sweep_report.h
//    "command": "train",                the qdqtrain command each run executes: train, or pipeline
//                                       (stages/pipeline.h; metrics from results.json's summary,
//                                       e.g. "qat_accuracy", "ptq_f1", "onnx_int8_accuracy")
//    "grid": {"training.learning_rate": [1e-4, 3e-4], "training.seed": [1, 2]},
//    "random": {"count": 6, "seed": 0,  and/or random draws (after the grid's product):
//               "space": {"training.learning_rate": {"log_uniform": [1e-5, 1e-3]},
//                         "training.warmup_ratio": {"uniform": [0, 0.2]},
//                         "training.seed": {"choice": [1, 2, 3]}}},
//    "metric": "accuracy",              the results table is sorted by it (from eval_results.json)
//    "greater_is_better": true,         default: false for names ending in "loss"
//    "parallel": 1}                     runs at a time on this machine
// Keys are dotted config paths, applied as `--set key=value`: every run's config is read so when
// the sweep is loaded, and an error in any stops it before a run starts; training.output_dir is
// the sweep's own key. Each run's overrides are fixed when the sweep is expanded, and written to
// <run dir>/sweep_run.json, so reruns of the sweep find the same runs in the same directories.
// A run whose directory holds eval_results.json (pipeline: results.json) is done and skipped; one
// with checkpoints resumes. As each run finishes, its record (the results file, sweep_run.json and
// every metrics.jsonl under it, not its checkpoints) is copied to <results_dir>/runs/<run>: kept
// with the tables, it marks the run done on a machine that lacks its directory, so a table too
// long for one machine's stay is finished on another.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdq {

struct SweepRun {
    std::string dir;                     // output directory of this run
    std::vector<std::string> overrides;  // "key=value" (value as JSON), training.output_dir last
    nlohmann::json values;               // {key: value} of the swept keys
};

struct Sweep {
    std::string config;  // resolved path of the base run config
    std::string output_dir;
    std::string results_dir;
    std::string command = "train";
    std::string metric = "accuracy";
    bool greater_is_better = true;
    int parallel = 1;
    std::vector<SweepRun> runs;
};

// Errors name the sweep file and key.
Sweep load_sweep(const std::string& path);

// Runs what is not done yet, `parallel` at a time (each with OMP_NUM_THREADS = cores/parallel),
// logging each run's output to <run dir>/run.log and calling `finished` after each run that
// succeeds. Returns how many runs failed.
int run_sweep(const Sweep& sweep, const std::string& qdqtrain_binary,
              const std::function<void(const SweepRun&)>& finished = {});

// A Slurm job-array script (one array task per run) that does what run_sweep does. With
// ranks > 1 each run is a data-parallel job of that many tasks, started through srun
// (docs/DATA_PARALLEL.md); only "train" sweeps run so, and others are refused.
std::string slurm_script(const Sweep& sweep, const std::string& qdqtrain_binary, int ranks = 1);

// What a finished run leaves: train's eval_results.json, or the pipeline's results.json.
std::string results_file(const Sweep& sweep);

// <results_dir>/runs/<run name>, or "" when results_dir is output_dir (the run is its own record).
std::string record_dir(const Sweep& sweep, const SweepRun& run);

// Copies a run finished in its own directory to its record (above); else does nothing.
void record_run(const Sweep& sweep, const SweepRun& run);

// Where a run's results are read from: its own directory once finished there, else its record
// once that holds them, else "" (not finished).
std::string finished_dir(const Sweep& sweep, const SweepRun& run);

}  // namespace qdq
