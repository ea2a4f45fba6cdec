// Data-parallel training under mpirun (parallel/, trainers/trainer.h), two ranks on this machine,
// one thread each: the qdqtrain binary as a user launches it.
//   2 ranks × batch 8 end where 1 process × batch 16 and 1 process × 8 × 2 accumulation steps
//   end, within FP32 summation-order noise, and two 2-rank runs are bit-identical;
//   a rank killed with SIGKILL stops the job, and the relaunch resumes from the last checkpoint
//   to end bit-identical to a 2-rank run never killed (each rank's dropout stream included);
//   a checkpoint resumes only with the number of ranks that wrote it;
//   evaluation split between the ranks gives one process's metrics exactly (IMDB-style accuracy
//   on the tiny task, with rank 0 alone writing TensorBoard events; SQuAD exact match and F1 on real questions, masked-LM loss and accuracy);
//   calibration over two ranks' shares of the batches, merged, gives one process's ranges by
//   all six methods, bit for bit;
//   the pipeline runs on two ranks and a rerun finds it done.
// Without mpirun these tests skip, except under CI=true, where they fail.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/data_dir.h"
#include "data/squad_reader.h"
#include "io/hdf5_weights.h"
#include "tests/support/data.h"
#include "tests/support/metrics_records.h"
#include "tests/support/mpirun.h"
#include "tests/support/run_qdqtrain.h"
#include "tests/support/same_weights.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/run_config.h"
#include "trainers/task.h"
#include "trainers/tensorboard_events.h"

extern char** environ;

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

namespace {

nlohmann::json dropout_free_config(const TempDir& dir, const std::string& out) {
    nlohmann::json raw = tiny_config(dir, out);
    raw["model"]["config"]["hidden_dropout_prob"] = 0.0;  // dropout draws per rank: no equal masks
    raw["model"]["config"]["attention_probs_dropout_prob"] = 0.0;
    raw["training"]["max_steps"] = 20;
    raw["training"]["save_steps"] = 10;
    raw["training"]["eval_steps"] = 10;
    return raw;
}

// The largest |a − b| over every tensor of two saved models.
double max_difference(const fs::path& a, const fs::path& b) {
    const Hdf5Weights x = load_hdf5_weights(a.string()), y = load_hdf5_weights(b.string());
    EXPECT_EQ(x.tensors.size(), y.tensors.size());
    double worst = 0;
    for (size_t i = 0; i < x.tensors.size() && i < y.tensors.size(); ++i) {
        EXPECT_EQ(x.tensors[i].name, y.tensors[i].name);
        const std::vector<float> p = x.tensors[i].tensor.to_vector(), q = y.tensors[i].tensor.to_vector();
        for (size_t k = 0; k < p.size(); ++k) worst = std::max(worst, (double)std::fabs(p[k] - q[k]));
    }
    return worst;
}

// The pid of a child of `parent` whose command is `comm` ("(qdqtrain)": an mpirun rank), or -1.
pid_t child_of_named(pid_t parent, const std::string& comm_wanted) {
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(entry.path() / "stat");
        std::string pid, comm, state;
        pid_t ppid = 0;
        if (stat >> pid >> comm >> state >> ppid && ppid == parent && comm == comm_wanted) return std::stoi(pid);
    }
    return -1;
}

// The metrics of `run`'s model.h5 evaluated by one process, as make_task and evaluate() give
// them, in eval_results.json's form.
nlohmann::json evaluated_alone(const nlohmann::json& raw, const fs::path& run) {
    nlohmann::json alone = raw;
    alone["model"]["init"] = (run / "model.h5").string();
    const RunConfig config = parse_run_config(alone, "alone.json", ".");
    return metrics_to_json(
        make_task(config, {.train = false, .eval = true})->evaluate(config.training.per_device_eval_batch_size));
}

// The first `count` questions of SQuAD's dev set as a v1.1 file.
void write_squad_questions(const std::string& path, size_t count) {
    const std::vector<SquadExample> questions = read_squad(data_path("squad/dev-v1.1.json.gz")).examples;
    nlohmann::json data = nlohmann::json::array();
    for (size_t i = 0; i < count; ++i) {
        const SquadExample& q = questions[i];
        nlohmann::json answers = nlohmann::json::array();
        for (const SquadAnswer& a : q.answers) answers.push_back({{"text", a.text}, {"answer_start", a.answer_start}});
        data.push_back({{"title", q.title},
                        {"paragraphs", {{{"context", q.context}, {"qas", {{{"id", q.id}, {"question", q.question}, {"answers", answers}}}}}}}});
    }
    std::ofstream(path) << nlohmann::json{{"version", "1.1"}, {"data", data}}.dump();
}

}  // namespace

// Seven evaluation batches of five (the last short) split four and three: the run's own
// evaluation, done on two ranks, equals one process's evaluation of the model it saved. One
// event file: rank 0 writes the run's log, events included.
TEST(DataParallel, ShardedEvaluationEqualsOneProcessOnAClassificationTask) {
    if (skip_without_mpirun()) return;
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = dropout_free_config(dir, "run");
    raw["training"]["per_device_eval_batch_size"] = 5;
    raw["training"]["max_steps"] = 6;
    raw["training"]["report_to"] = "tensorboard";
    Process p = train_on_two_ranks(dir.write("run.json", raw.dump()));
    ASSERT_EQ(p.status, 0) << p.output;
    const nlohmann::json sharded = nlohmann::json::parse(std::ifstream(dir.path() / "run" / "eval_results.json"));
    EXPECT_EQ(sharded, evaluated_alone(raw, dir.path() / "run"));
    EXPECT_EQ(sharded["eval_examples"], 32);
    EXPECT_EQ(event_files((dir.path() / "run" / "runs").string()).size(), 1u);
}

// SQuAD: each rank runs half the windows' batches; the official metric is computed once over
// every question's answer, so exact match and F1 are one process's.
TEST(DataParallel, ShardedEvaluationEqualsOneProcessOnSquad) {
    if (skip_without_mpirun()) return;
    QDQ_REQUIRE_DATA_FILE("squad/dev-v1.1.json.gz");
    TempDir dir;
    write_squad_questions((dir.path() / "questions.json").string(), 24);
    const nlohmann::json raw = {
        {"model",
         {{"config",
           {{"hidden_size", 32}, {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"intermediate_size", 64},
            {"max_position_embeddings", 256}, {"hidden_dropout_prob", 0.0}, {"attention_probs_dropout_prob", 0.0}}}}},
        {"data",
         {{"task", "squad"}, {"max_seq_length", 192}, {"doc_stride", 64}, {"data_dir", dir.path().string()},
          {"vocab", data_path("vocab/bert-base-uncased-vocab.txt")}, {"train_files", "questions.json"},
          {"eval_files", "questions.json"}}},
        {"training",
         {{"output_dir", (dir.path() / "run").string()}, {"seed", 3}, {"per_device_train_batch_size", 4},
          {"per_device_eval_batch_size", 4}, {"max_steps", 4}, {"learning_rate", 1e-3}, {"save_steps", 4}}}};
    Process p = train_on_two_ranks(dir.write("run.json", raw.dump()));
    ASSERT_EQ(p.status, 0) << p.output;
    const nlohmann::json sharded = nlohmann::json::parse(std::ifstream(dir.path() / "run" / "eval_results.json"));
    ASSERT_TRUE(sharded.contains("f1")) << sharded.dump();
    EXPECT_EQ(sharded, evaluated_alone(raw, dir.path() / "run"));
}

// Six calibration batches of eight: rank 0 collects 0, 2, 4 and rank 1 collects 1, 3, 5 in
// the first batch's bins; the merged histograms give every method's ranges exactly as one process
// collecting all six, and the checkpoints, metrics and sensitivity rows equal.
TEST(DataParallel, MergedCalibrationEqualsOneProcess) {
    if (skip_without_mpirun()) return;
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = dropout_free_config(dir, "fp32");
    raw["training"]["per_device_eval_batch_size"] = 8;
    Process fp32 = run_qdqtrain("train " + dir.write("fp32.json", raw.dump()));
    ASSERT_EQ(fp32.status, 0) << fp32.output;
    raw["quantization"] = {{"calibration_examples", 48}};
    const std::string config = dir.write("calibrate.json", raw.dump());
    const std::string args = " calibrate " + config + " --checkpoint " + (dir.path() / "fp32" / "model.h5").string() +
                             " --all-methods --sensitivity layers --out ";
    Process alone = run_command(std::string(QDQTRAIN_PATH) + args + (dir.path() / "alone").string());
    ASSERT_EQ(alone.status, 0) << alone.output;
    Process two = run_command(kMpirun + std::string(QDQTRAIN_PATH) + args + (dir.path() / "two").string());
    ASSERT_EQ(two.status, 0) << two.output;
    const nlohmann::json a = nlohmann::json::parse(std::ifstream(dir.path() / "alone" / "calibration.json"));
    const nlohmann::json b = nlohmann::json::parse(std::ifstream(dir.path() / "two" / "calibration.json"));
    ASSERT_EQ(a["methods"].size(), 6u);
    for (size_t m = 0; m < a["methods"].size(); ++m) {
        const std::string name = a["methods"][m]["method"];
        expect_same_weights(dir.path() / "alone" / name / "ranges.h5", dir.path() / "two" / name / "ranges.h5");
        EXPECT_EQ(a["methods"][m]["metrics"], b["methods"][m]["metrics"]) << name;
    }
    expect_same_weights(dir.path() / "alone" / "model.h5", dir.path() / "two" / "model.h5");  // the float weights
    EXPECT_EQ(a["quantizers"], b["quantizers"]);  // ranges, histograms and clipping stats
    EXPECT_EQ(a["sensitivity"], b["sensitivity"]);
    EXPECT_EQ(a["cost"]["batches"], 6);
}

// Masked-LM: the two ranks' pretraining run evaluates its held-out text split between them;
// one process evaluating the model it saved finds the same loss and accuracy, bit for bit.
TEST(DataParallel, ShardedEvaluationEqualsOneProcessOnMaskedLm) {
    if (skip_without_mpirun()) return;
    TempDir dir;
    dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\ndog\nran\nto\npark\n.\n");
    std::string corpus;
    for (int i = 0; i < 40; ++i) corpus += (i % 2 ? "the cat sat on the mat.\n\n" : "the dog ran to the park.\n\n");
    dir.write("corpus.txt", corpus);
    const nlohmann::json raw = {
        {"model",
         {{"config",
           {{"vocab_size", 15}, {"hidden_size", 16}, {"num_hidden_layers", 1}, {"num_attention_heads", 2},
            {"intermediate_size", 32}, {"max_position_embeddings", 32}}}}},
        {"data",
         {{"task", "mlm"}, {"data_dir", dir.path().string()}, {"vocab", "vocab.txt"}, {"train_files", "corpus.txt"},
          {"eval_files", "corpus.txt"}, {"max_seq_length", 16}}},
        {"training",
         {{"output_dir", (dir.path() / "run").string()}, {"seed", 5}, {"per_device_train_batch_size", 4},
          {"per_device_eval_batch_size", 3}, {"max_steps", 4}, {"learning_rate", 1e-3}, {"save_steps", 4}}}};
    Process p = train_on_two_ranks(dir.write("run.json", raw.dump()));
    ASSERT_EQ(p.status, 0) << p.output;
    const nlohmann::json sharded = nlohmann::json::parse(std::ifstream(dir.path() / "run" / "eval_results.json"));
    ASSERT_GT(sharded["eval_examples"].get<int64_t>(), 6) << sharded.dump();  // several batches of three
    EXPECT_EQ(sharded, evaluated_alone(raw, dir.path() / "run"));
}

// The whole pipeline on two ranks: each stage data parallel, the ONNX stage and the report on
// rank 0; the table is printed once, and a rerun on two ranks finds every stage done.
TEST(DataParallel, PipelineRunsOnTwoRanksAndARerunRedoesNothing) {
    if (skip_without_mpirun()) return;
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = dropout_free_config(dir, "pipe");
    raw["quantization"] = {{"calibration_examples", 16}};
    raw["pipeline"] = {{"calibration", "max"}, {"sensitivity", "none"}, {"validation_fraction", 0.25},
                       {"qat_num_train_epochs", 1}};
    const std::string config = dir.write("pipe.json", raw.dump());
    Process first = run_command(kMpirun + std::string(QDQTRAIN_PATH) + " pipeline " + config);
    ASSERT_EQ(first.status, 0) << first.output;
    const size_t table = first.output.find("| model |");
    ASSERT_NE(table, std::string::npos) << first.output;
    EXPECT_EQ(first.output.find("| model |", table + 1), std::string::npos) << first.output;
    for (const char* file : {"fp32/model.h5", "fp32/test_results.json", "calibrate/calibration.json", "qat/model.h5",
                             "onnx/model_int8.onnx", "results.json", "results.md"})
        EXPECT_TRUE(fs::exists(dir.path() / "pipe" / file)) << file;
    Process again = run_command(kMpirun + std::string(QDQTRAIN_PATH) + " pipeline " + config);
    ASSERT_EQ(again.status, 0) << again.output;
    EXPECT_NE(again.output.find("pipeline: qat done before"), std::string::npos) << again.output;
    EXPECT_EQ(again.output.find("pipeline: qat ->"), std::string::npos) << again.output;
}

// 16 examples a step in three ways. Summing two halves' weighted means instead of one mean of
// 16 changes the gradients in their last bits; AdamW divides by √v, so a gradient that is
// pure rounding noise (the key bias's: softmax ignores it) still moves its weight by up to a
// step's size. Measured: every tensor within 1e-6 but that bias, within 1e-5; the bound is 1e-5.
TEST(DataParallel, TwoRanksEndWhereOneProcessOfTheWholeBatchEnds) {
    if (skip_without_mpirun()) return;
    TempDir dir;
    write_task_files(dir);
    nlohmann::json one = dropout_free_config(dir, "one");
    one["training"]["per_device_train_batch_size"] = 16;
    nlohmann::json accumulated = dropout_free_config(dir, "accumulated");
    accumulated["training"]["gradient_accumulation_steps"] = 2;
    for (const nlohmann::json* raw : {&one, &accumulated}) {
        Process p = run_qdqtrain("train " + dir.write(raw->at("training").at("output_dir").get<std::string>() + ".json", raw->dump()));
        ASSERT_EQ(p.status, 0) << p.output;
    }
    for (const char* out : {"two", "two_again"}) {
        Process p = train_on_two_ranks(dir.write(std::string(out) + ".json", dropout_free_config(dir, out).dump()));
        ASSERT_EQ(p.status, 0) << p.output;
        EXPECT_NE(p.output.find("data parallel: 2 ranks"), std::string::npos) << p.output;
        // Rank 0 alone reports: one final line of metrics.
        const size_t first = p.output.find("{\"accuracy\"");
        ASSERT_NE(first, std::string::npos) << p.output;
        EXPECT_EQ(p.output.find("{\"accuracy\"", first + 1), std::string::npos) << p.output;
    }
    const fs::path root = dir.path();
    EXPECT_LE(max_difference(root / "one" / "model.h5", root / "two" / "model.h5"), 1e-5);
    EXPECT_LE(max_difference(root / "one" / "model.h5", root / "accumulated" / "model.h5"), 1e-5);
    expect_same_weights(root / "two" / "model.h5", root / "two_again" / "model.h5");
    EXPECT_EQ(metrics_records(root / "two"), metrics_records(root / "two_again"));
    // The log counts global steps and every rank's examples, as one process of 16 does.
    const std::vector<nlohmann::json> a = metrics_records(root / "one"), b = metrics_records(root / "two");
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i]["step"], b[i]["step"]);
        EXPECT_EQ(a[i]["num_input_tokens_seen"], b[i]["num_input_tokens_seen"]);
        if (a[i].contains("loss")) {
            EXPECT_NEAR(a[i]["loss"].get<double>(), b[i]["loss"].get<double>(), 1e-6);
        }
    }
    EXPECT_TRUE(fs::exists(root / "two" / checkpoint_name(20)));
    // A checkpoint of two ranks resumes only with two. (A finished run is left as it is, whatever
    // the number of processes: without its model.h5 it is a run stopped at its last checkpoint.)
    fs::remove(root / "two" / "model.h5");
    Process alone = run_qdqtrain("train " + (root / "two.json").string());
    EXPECT_NE(alone.status, 0);
    EXPECT_NE(alone.output.find("checkpoint-20.h5: was written by a run of 2 process(es), and this is 1"), std::string::npos)
        << alone.output;
}

// Dropout on, so that each rank's own stream must come back from the checkpoint.
TEST(DataParallel, AKilledRankStopsTheJobAndTheRelaunchResumesBitIdentical) {
    if (skip_without_mpirun()) return;
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = resumable_config(dir, "straight");
    Process straight = train_on_two_ranks(dir.write("straight.json", raw.dump()));
    ASSERT_EQ(straight.status, 0) << straight.output;

    raw["training"]["output_dir"] = (dir.path() / "killed").string();
    const std::string config = dir.write("killed.json", raw.dump());
    const fs::path run = dir.path() / "killed";
    std::vector<std::string> args = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-x", "OMP_NUM_THREADS=1",
                                     "-np", "2", QDQTRAIN_PATH, "train", config};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&quiet, 1, 2);
    pid_t mpirun;
    ASSERT_EQ(posix_spawnp(&mpirun, "mpirun", &quiet, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&quiet);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(run / checkpoint_name(30)) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const pid_t rank = child_of_named(mpirun, "(qdqtrain)");
    ASSERT_GT(rank, 0) << "no rank found to kill";
    kill(rank, SIGKILL);
    int status = 0;
    waitpid(mpirun, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << "the job did not stop when a rank was killed";
    ASSERT_FALSE(fs::exists(run / "model.h5")) << "the run ended before it was killed";

    Process resumed = train_on_two_ranks(config);
    ASSERT_EQ(resumed.status, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resuming"), std::string::npos);
    expect_same_weights(dir.path() / "straight" / "model.h5", run / "model.h5");
    EXPECT_EQ(metrics_records(dir.path() / "straight"), metrics_records(run));
}
