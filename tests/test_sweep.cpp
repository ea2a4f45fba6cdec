// Sweeps: grid and random expansion, errors naming the key, a real sweep of four tiny runs two
// at a time through the qdqtrain binary (then skipped when run again), the results table and the
// Slurm script (checked by bash -n); records in the results directory that stand in for runs
// finished on another machine.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>

#include "json/json_file.h"
#include "results/pipeline_results.h"
#include "sweeps/sweep.h"
#include "sweeps/sweep_report.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"

using namespace qdq;
using qdq::testing::TempDir;
namespace fs = std::filesystem;

namespace {

std::string write_sweep(const TempDir& dir, nlohmann::json sweep, nlohmann::json base = nullptr) {
    dir.write("base.json", (base.is_null() ? qdq::testing::tiny_config(dir, "unused") : base).dump(2));
    sweep["config"] = "base.json";
    if (!sweep.contains("output_dir")) sweep["output_dir"] = (dir.path() / "sweep").string();
    return dir.write("sweep.json", sweep.dump(2));
}

std::string error_of(const std::string& path) {
    try {
        load_sweep(path);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "no error";
}

std::string run(const std::string& command, int& status) {
    std::string output;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    char buffer[4096];
    while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
    int raw = pclose(pipe);
    status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    return output;
}

}  // namespace

TEST(Sweep, GridIsTheProductLastKeyFastest) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    Sweep s = load_sweep(write_sweep(
        dir, {{"grid", {{"training.learning_rate", {1e-3, 1e-2}}, {"training.seed", {1, 2, 3}}}}}));
    ASSERT_EQ(s.runs.size(), 6u);
    EXPECT_EQ(s.runs[0].values, (nlohmann::json{{"training.learning_rate", 1e-3}, {"training.seed", 1}}));
    EXPECT_EQ(s.runs[1].values, (nlohmann::json{{"training.learning_rate", 1e-3}, {"training.seed", 2}}));
    EXPECT_EQ(s.runs[5].values, (nlohmann::json{{"training.learning_rate", 1e-2}, {"training.seed", 3}}));
    EXPECT_EQ(s.runs[4].dir, (dir.path() / "sweep" / "run-004").string());
    EXPECT_EQ(s.runs[4].overrides.back(), "training.output_dir=\"" + s.runs[4].dir + "\"");
    EXPECT_EQ(s.metric, "accuracy");
    EXPECT_TRUE(s.greater_is_better);
}

TEST(Sweep, RandomDrawsAreReproducibleAndInRange) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    const nlohmann::json random = {{"count", 20}, {"seed", 5},
                                   {"space", {{"training.learning_rate", {{"log_uniform", {1e-5, 1e-3}}}},
                                              {"training.seed", {{"choice", {1, 2}}}},
                                              {"training.warmup_ratio", {{"uniform", {0, 0.2}}}}}}};
    nlohmann::json base = qdq::testing::tiny_config(dir, "unused");
    base["training"].erase("warmup_steps");  // the runs' warmup is the drawn ratio
    const std::string path = write_sweep(dir, {{"random", random}, {"metric", "eval_loss"}}, base);
    Sweep a = load_sweep(path), b = load_sweep(path);
    ASSERT_EQ(a.runs.size(), 20u);
    EXPECT_FALSE(a.greater_is_better);
    std::set<int> seeds;
    for (size_t i = 0; i < a.runs.size(); ++i) {
        EXPECT_EQ(a.runs[i].values, b.runs[i].values);
        const double lr = a.runs[i].values["training.learning_rate"];
        EXPECT_GE(lr, 1e-5);
        EXPECT_LE(lr, 1e-3);
        const double warmup = a.runs[i].values["training.warmup_ratio"];
        EXPECT_GE(warmup, 0);
        EXPECT_LE(warmup, 0.2);
        seeds.insert(a.runs[i].values["training.seed"].get<int>());
    }
    EXPECT_EQ(seeds, (std::set<int>{1, 2}));
}

TEST(Sweep, ErrorsNameTheKey) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    EXPECT_NE(error_of(write_sweep(dir, {{"grid", {{"training.seed", nlohmann::json::array()}}}})).find("grid.training.seed"),
              std::string::npos);
    EXPECT_NE(error_of(write_sweep(dir, {{"gird", {{"training.seed", {1}}}}})).find("'gird'"), std::string::npos);
    EXPECT_NE(error_of(write_sweep(dir, {})).find("no runs"), std::string::npos);
    EXPECT_NE(error_of(write_sweep(dir, {{"random", {{"count", 2}, {"space", {{"training.seed", {{"normal", {0, 1}}}}}}}}}))
                  .find("random.space.training.seed"),
              std::string::npos);
    nlohmann::json sweep = {{"grid", {{"training.seed", {1}}}}, {"config", "missing.json"},
                            {"output_dir", "x"}};
    EXPECT_NE(error_of(dir.write("bad.json", sweep.dump())).find("'config' names a missing file"), std::string::npos);
    // Each run's config is read before any run starts, as `--set` reads it: a misspelt key and a
    // value of the wrong type are the sweep's errors, naming the run, and no run directory is made.
    std::string error = error_of(write_sweep(dir, {{"grid", {{"training.seed", {1, 2}}, {"training.sed", {1}}}}}));
    EXPECT_NE(error.find("sweep.json: run-000"), std::string::npos) << error;
    EXPECT_NE(error.find("training.sed"), std::string::npos) << error;
    error = error_of(write_sweep(dir, {{"grid", {{"training.learning_rate", {1e-3, "fast"}}}}}));
    EXPECT_NE(error.find("run-001"), std::string::npos) << error;
    EXPECT_NE(error.find("'training.learning_rate' must be a number"), std::string::npos) << error;
    error = error_of(write_sweep(dir, {{"grid", {{"training.output_dir", {"a", "b"}}}}}));
    EXPECT_NE(error.find("'training.output_dir' is the sweep's to set"), std::string::npos) << error;
    EXPECT_FALSE(fs::exists(dir.path() / "sweep"));
}

TEST(Sweep, RunsInParallelSkipsFinishedRunsAndSortsResults) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    const std::string path = write_sweep(
        dir, {{"grid", {{"training.learning_rate", {1e-4, 2e-2}}, {"training.seed", {1, 2}}}}, {"parallel", 2}});
    int status = 0;
    std::string output = run(std::string(QDQTRAIN_PATH) + " sweep " + path, status);
    ASSERT_EQ(status, 0) << output;
    Sweep sweep = load_sweep(path);
    nlohmann::json results = sweep_results(sweep);
    ASSERT_EQ(results.size(), 4u);
    for (size_t i = 0; i + 1 < results.size(); ++i)
        EXPECT_GE(results[i]["metrics"]["accuracy"].get<double>(), results[i + 1]["metrics"]["accuracy"].get<double>());
    // Each run is the run `train` would make with the same overrides: its config says so.
    nlohmann::json config;
    std::ifstream(fs::path(sweep.runs[3].dir) / "config.json") >> config;
    EXPECT_EQ(config["training"]["learning_rate"], 2e-2);
    EXPECT_EQ(config["training"]["seed"], 2);
    std::string table;
    std::getline(std::ifstream(dir.path() / "sweep" / "results.md"), table, '\0');
    std::istringstream lines(table);
    int rows = 0;
    for (std::string line; std::getline(lines, line);) rows += line.rfind("|", 0) == 0;
    EXPECT_EQ(rows, 6) << table;  // header, rule, 4 runs
    EXPECT_NE(table.find("| run | training.learning_rate | training.seed | accuracy |"), std::string::npos) << table;

    output = run(std::string(QDQTRAIN_PATH) + " sweep " + path, status);
    EXPECT_EQ(status, 0);
    EXPECT_EQ(output.find("start"), std::string::npos) << output;
    EXPECT_NE(output.find("skip   " + sweep.runs[0].dir + " (finished)"), std::string::npos) << output;

    // Changing the sweep under existing run directories is refused.
    write_sweep(dir, {{"grid", {{"training.learning_rate", {3e-4, 2e-2}}, {"training.seed", {1, 2}}}}});
    EXPECT_NE(error_of(path).find("made for other values"), std::string::npos);
}

TEST(Sweep, SlurmScriptIsValidBash) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    Sweep sweep = load_sweep(write_sweep(dir, {{"grid", {{"training.seed", {1, 2, 3}}}}}));
    const std::string script = slurm_script(sweep, "/opt/qdq tools/qdqtrain");
    EXPECT_NE(script.find("#SBATCH --array=0-2\n"), std::string::npos);
    EXPECT_NE(script.find("'/opt/qdq tools/qdqtrain'"), std::string::npos);
    EXPECT_NE(script.find(sweep.runs[2].dir), std::string::npos);
    EXPECT_EQ(script.find("--ntasks"), std::string::npos);
    const std::string file = dir.write("sweep.sbatch", script);
    int status = 0;
    std::string output = run("bash -n " + file, status);
    EXPECT_EQ(status, 0) << output;
    // Data parallel: N tasks a run, each started by srun; a pipeline sweep is refused.
    const std::string parallel = slurm_script(sweep, "/opt/qdq tools/qdqtrain", 4);
    EXPECT_NE(parallel.find("#SBATCH --ntasks=4\n"), std::string::npos);
    EXPECT_NE(parallel.find("exec srun '/opt/qdq tools/qdqtrain' \"${args[@]}\""), std::string::npos) << parallel;
    output = run("bash -n " + dir.write("parallel.sbatch", parallel), status);
    EXPECT_EQ(status, 0) << output;
    sweep.command = "pipeline";
    try {
        slurm_script(sweep, "qdqtrain", 2);
        ADD_FAILURE() << "a pipeline sweep was given ranks";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("data parallel under 'train' only"), std::string::npos) << e.what();
    }
}

// A pipeline sweep's report from run directories written here: two learning rates × two seeds.
// Each cell is checked against mean ± sample std worked out by hand from the numbers below.
TEST(Sweep, RecordsInTheResultsDirectoryStandInForRunsDoneElsewhere) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    const fs::path tables = dir.path() / "tables";
    const std::string path =
        write_sweep(dir, {{"results_dir", tables.string()}, {"grid", {{"training.seed", {1, 2}}}}});
    int status = 0;
    std::string output = run(std::string(QDQTRAIN_PATH) + " sweep " + path, status);
    ASSERT_EQ(status, 0) << output;
    const nlohmann::json before = sweep_results(load_sweep(path));
    for (const char* run : {"run-000", "run-001"}) {
        const fs::path record = tables / "runs" / run;
        EXPECT_TRUE(fs::exists(record / "eval_results.json")) << run;
        EXPECT_TRUE(fs::exists(record / "metrics.jsonl")) << run;
        EXPECT_EQ(read_json_file((record / "sweep_run.json").string())["training.seed"], run[6] == '0' ? 1 : 2);
        for (const auto& entry : fs::recursive_directory_iterator(record))
            EXPECT_NE(entry.path().extension(), ".h5") << entry.path();
    }

    // Another machine: the records, none of the run directories.
    fs::remove_all(dir.path() / "sweep");
    output = run(std::string(QDQTRAIN_PATH) + " sweep " + path, status);
    ASSERT_EQ(status, 0) << output;
    EXPECT_EQ(output.find("start"), std::string::npos) << output;
    EXPECT_NE(output.find("recorded in " + (tables / "runs" / "run-001").string()), std::string::npos) << output;
    const nlohmann::json after = sweep_results(load_sweep(path));
    ASSERT_EQ(after.size(), 2u);
    for (size_t i = 0; i < after.size(); ++i) EXPECT_EQ(after[i]["metrics"], before[i]["metrics"]) << i;
    EXPECT_FALSE(fs::exists(dir.path() / "sweep"));
    const std::string script = slurm_script(load_sweep(path), "/bin/qdqtrain");
    EXPECT_NE(script.find("/runs/'\"$(basename \"$dir\")/eval_results.json\" ]] && exit 0"), std::string::npos) << script;

    // A record made for other values is refused, as a run directory is.
    write_sweep(dir, {{"results_dir", tables.string()}, {"grid", {{"training.seed", {3, 2}}}}});
    EXPECT_NE(error_of(path).find("made for other values"), std::string::npos) << error_of(path);
}

TEST(Sweep, PipelineReportAveragesOverSeedsOnly) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    const std::string path = write_sweep(dir, {{"command", "pipeline"},
                                               {"results_dir", (dir.path() / "tables").string()},
                                               {"metric", "qat_accuracy"},
                                               {"grid", {{"training.learning_rate", {1e-4, 2e-4}}, {"training.seed", {1, 2}}}}});
    Sweep sweep = load_sweep(path);
    ASSERT_EQ(sweep.runs.size(), 4u);
    // accuracy of FP32, PTQ max, QAT, ONNX INT8 per run; latency of the ONNX rows.
    const double table[4][4] = {{0.80, 0.70, 0.79, 0.79}, {0.84, 0.72, 0.81, 0.80},
                                {0.90, 0.60, 0.88, 0.88}, {0.90, 0.60, 0.88, 0.88}};
    auto accuracy = [](double a) { return Metrics{.task = TaskKind::classification, .scores = {{"accuracy", a}}}; };
    auto counted = [](double a) {
        return Metrics{.task = TaskKind::classification, .scores = {{"accuracy", a}}, .counts = {{"eval_examples", 100}}};
    };
    for (size_t r = 0; r < 4; ++r) {
        const std::string run = sweep.runs[r].dir;
        PipelineResults results;
        results.config.model.init = "model.h5";
        results.config.training.seed = sweep.runs[r].values["training.seed"].get<uint64_t>();
        results.fp32 = accuracy(table[r][0]);
        results.calibration.metric = "accuracy";
        results.calibration.fp32 = results.fp32;
        results.calibration.methods = {{"max", accuracy(table[r][1]), run + "/calibrate/max/model.h5"}};
        results.calibration.best = "max";
        results.qat_from = r == 1 ? "entropy" : "max";
        results.qat = counted(table[r][2]);
        // A variant 1 point above QAT; odd runs deployed it.
        results.qat_variants = {{"kd", counted(table[r][2] + 0.01), {}}};
        results.deployed_qat = r % 2 ? "QAT kd" : "QAT";
        results.onnx = OnnxStage{{"ONNX Runtime FP32", run + "/onnx/model_fp32.onnx", results.fp32, 4.0, 20.0 + (double)r, 0},
                                 {"ONNX Runtime INT8", run + "/onnx/model_int8.onnx", accuracy(table[r][3]), 2.0,
                                  10.0 + (double)r, 0}};
        for (const char* stage : {"fp32", "qat", "qat_kd"}) {
            fs::create_directories(fs::path(run) / stage);
            std::ofstream(fs::path(run) / stage / "metrics.jsonl")
                << "{\"step\":1,\"loss\":0.7}\n{\"step\":2,\"loss\":0.5,\"eval_accuracy\":0.8}\n";
        }
        write_json_file((fs::path(run) / "results.json").string(), pipeline_results_to_json(results));
    }
    const std::string md = write_sweep_report(sweep, sweep_results(sweep));
    EXPECT_EQ(md, [&] {
        std::string text;
        std::getline(std::ifstream(dir.path() / "tables" / "results.md"), text, '\0');
        return text;
    }());
    // Seeds 1 and 2 of lr 1e-4: FP32 82 ± 2.83 (sqrt(8)), PTQ 71 ± 1.41, its change from FP32
    // -11 ± 1.41 (−10, −12), QAT 80 ± 1.41 from both calibrations, latency 10.5 ± 0.7.
    EXPECT_NE(md.find("## training.learning_rate = 0.0001"), std::string::npos) << md;
    EXPECT_NE(md.find("| FP32 | 82.00 ± 2.83 |  |"), std::string::npos) << md;
    EXPECT_NE(md.find("| PTQ max | 71.00 ± 1.41 | -11.00 ± 1.41 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| QAT (from entropy, max) | 80.00 ± 1.41 | -2.00 ± 1.41 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| QAT kd (from entropy, max) | 81.00 ± 1.41 | -1.00 ± 1.41 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| ONNX Runtime INT8 (from QAT, QAT kd) | 79.50 ± 0.71 | -2.50 ± 2.12 | 10.5 ± 0.7 | 2.00 ± 0.00 |"),
              std::string::npos) << md;
    EXPECT_NE(md.find("plots/run-000_qat_kd_loss.svg"), std::string::npos) << md;
    // lr 2e-4: equal runs, std 0.
    EXPECT_NE(md.find("| PTQ max | 60.00 ± 0.00 | -30.00 ± 0.00 |"), std::string::npos) << md;
    EXPECT_NE(md.find("run-001 (seed 2). Every framework row ran its matrix products in FP32, those of two quantized operands "
                      "on their integer codes, as the exported INT8 graph computes them.\n"), std::string::npos) << md;
    EXPECT_NE(md.find("## Runs"), std::string::npos);
    // The example count is the same in every run: named once, not a column.
    const std::string header = md.substr(md.find("| run |"), md.find('\n', md.find("| run |")) - md.find("| run |"));
    EXPECT_EQ(header.rfind("| run | training.learning_rate | training.seed | qat_accuracy |", 0), 0u) << md;
    EXPECT_EQ(header.find("eval_examples"), std::string::npos) << header;
    EXPECT_NE(md.find("The same in every run: qat_eval_examples 100, qat_kd_eval_examples 100.\n"), std::string::npos) << md;
    for (const char* file : {"plots/group-0_metric_by_stage.svg", "plots/group-1_metric_by_stage.svg",
                             "plots/run-003_qat_loss.svg", "plots/run-000_fp32_eval.svg", "results.json"})
        EXPECT_TRUE(fs::exists(dir.path() / "tables" / file)) << file;
}

TEST(Sweep, PipelineReportGivesEachQuantizersOutlierRatioAndSqnrOverTheRuns) {
    TempDir dir;
    qdq::testing::write_task_files(dir);
    const std::string path = write_sweep(dir, {{"command", "pipeline"},
                                               {"results_dir", (dir.path() / "tables").string()},
                                               {"metric", "qat_accuracy"},
                                               {"grid", {{"training.seed", {1, 2}}}}});
    Sweep sweep = load_sweep(path);
    // Per run: the FFN output's max and p99.99 (ratios 10 and 5) and its SQNR at mse, where QAT
    // started (not at max); the attention output's (ratios 2 and 3); a weight's SQNR.
    const double ffn_p9999[2] = {1.0, 2.0}, ffn_sqnr[2] = {20, 30};
    for (size_t r = 0; r < 2; ++r) {
        const std::string run = sweep.runs[r].dir;
        PipelineResults results;
        results.config.model.init = "model.h5";
        results.config.training.seed = sweep.runs[r].values["training.seed"].get<uint64_t>();
        results.fp32 = {.task = TaskKind::classification, .scores = {{"accuracy", 0.8}}};
        results.calibration.metric = "accuracy";
        results.calibration.fp32 = results.fp32;
        results.calibration.methods = {{"mse", results.fp32, run + "/calibrate/mse/model.h5"}};
        results.calibration.best = "mse";
        results.qat_from = "mse";
        results.qat = results.fp32;
        QuantizerStats ffn{"bert.encoder.layer.1.output.add_local_input_quantizer", {}, {}, {}};
        ffn.methods = {{"max", {10, 0, 99}}, {"percentile-99.99", {ffn_p9999[r], 1e-4, 50}}, {"mse", {3, 1e-3, ffn_sqnr[r]}}};
        QuantizerStats attn{"bert.encoder.layer.0.attention.output.add_local_input_quantizer", {}, {}, {}};
        attn.methods = {{"max", {6, 0, 30}}, {"percentile-99.99", {r ? 2.0 : 3.0, 1e-4, 31}}, {"mse", {2, 1e-3, 32}}};
        QuantizerStats weight{"bert.encoder.layer.0.output.dense._weight_quantizer", WeightRangeStats{0.5, 0.1, 0, 40.0 + (double)r}, {}, {}};
        results.calibration.quantizers = {ffn, attn, weight};
        // The second run's record is from a build that scored on dequantized values.
        if (r == 1) results.scoring = Scoring{QuantizedProducts::dequantized_floats, LayerNormForward::exact};
        for (const char* stage : {"fp32", "qat"}) {
            fs::create_directories(fs::path(run) / stage);
            std::ofstream(fs::path(run) / stage / "metrics.jsonl") << "{\"step\":1,\"loss\":0.7}\n";
        }
        write_json_file((fs::path(run) / "results.json").string(), pipeline_results_to_json(results));
    }
    const std::string md = write_sweep_report(sweep, sweep_results(sweep));
    // Runs scored differently are each said.
    EXPECT_NE(md.find("The runs were not all scored alike. run-000 (seed 1): Every framework row ran its matrix "
                      "products in FP32, those of two quantized operands on their integer codes"),
              std::string::npos) << md;
    EXPECT_NE(md.find(" run-001 (seed 2): Every framework row ran its matrix products in FP32, those of two quantized "
                      "operands on their dequantized values"),
              std::string::npos) << md;
    // Ratios 10 and 5: 7.5 ± 3.54; SQNR at mse 20 and 30: 25 ± 7.07; the weight's 40 and 41.
    EXPECT_NE(md.find("| `bert.encoder.layer.1.output.add_local_input_quantizer` | 7.5 ± 3.5 | 25.0 ± 7.1 |"),
              std::string::npos) << md;
    EXPECT_NE(md.find("| `bert.encoder.layer.0.attention.output.add_local_input_quantizer` | 2.5 ± 0.7 | 32.0 ± 0.0 |"),
              std::string::npos) << md;
    EXPECT_NE(md.find("| `bert.encoder.layer.0.output.dense._weight_quantizer` |  | 40.5 ± 0.7 |"), std::string::npos) << md;
    EXPECT_NE(md.find("at least 5 (a Gaussian's is about 1.4): 1 of 2. Where they sit:\n\n"
                      "- `bert.encoder.layer.1.output.add_local_input_quantizer`, 7.5: FFN output, in the sum before "
                      "the FFN's LayerNorm\n\n1 of these 1 sit where the literature"),
              std::string::npos) << md;
    // The lowest SQNRs among activations (the weight's is not one), lowest first.
    EXPECT_NE(md.find("The activations with the lowest SQNR at that range, and where they sit:\n\n"
                      "- `bert.encoder.layer.1.output.add_local_input_quantizer`, 25.0 dB: FFN output, in the sum "
                      "before the FFN's LayerNorm\n- `bert.encoder.layer.0.attention.output.add_local_input_quantizer`, "
                      "32.0 dB: "),
              std::string::npos) << md;
}
