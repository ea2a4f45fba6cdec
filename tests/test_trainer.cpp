// The training loop on a tiny model and a synthetic sentiment task written by the test: it
// learns; a run stopped in process and resumed ends bit-identical to a run never stopped
// (SIGKILL and resume: test_trainer_resume.cpp); bf16 without a kernel is FP32;
// a NaN loss stops the run and keeps the last checkpoint;
// the schedule reaches the optimizer; the input tokens seen are counted; a changed config
// refuses to resume. The command line's exit codes: test_cli.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "autograd/gemm_bf16.h"
#include "autograd/matmul_precision.h"
#include "io/hdf5_weights.h"
#include "tests/support/gradcheck.h"
#include "tests/support/meddling_task.h"
#include "tests/support/metrics_records.h"
#include "tests/support/run_qdqtrain.h"
#include "tests/support/same_weights.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

using namespace qdq;
using qdq::testing::MeddlingTask;
using qdq::testing::metrics_records;
using qdq::testing::train_config;
using qdq::testing::Process;
using qdq::testing::expect_same_weights;
using qdq::testing::run_qdqtrain;
using qdq::testing::tiny_config;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

namespace {

RunConfig parse(const nlohmann::json& raw) { return parse_run_config(raw, "test.json", "."); }

std::string write_config(const qdq::testing::TempDir& dir, const std::string& name, const nlohmann::json& raw) {
    return dir.write(name, raw.dump(2));
}

}  // namespace

TEST(Trainer, LearnsTheTaskAndWritesItsOutputs) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    raw["training"]["max_steps"] = 40;
    raw["training"]["eval_steps"] = 20;
    TrainOutcome outcome = train_config(raw);
    ASSERT_EQ(outcome.status, TrainStatus::finished);
    EXPECT_EQ(outcome.step, 40);
    EXPECT_GE(outcome.metrics.scores.at("accuracy"), 0.9);  // chance is 0.5
    std::vector<std::string> scores;
    for (const auto& [name, value] : outcome.metrics.scores) scores.push_back(name);
    EXPECT_EQ(scores, score_names(TaskKind::classification, {}));  // what metric_for_best_model may name
    const fs::path run = dir.path() / "run";
    for (const char* file : {"config.json", "metrics.jsonl", "model.h5", "eval_results.json", "checkpoint-40.h5"})
        EXPECT_TRUE(fs::exists(run / file)) << file;
    EXPECT_EQ(list_checkpoints(run.string()).size(), 2u);  // save_total_limit's default
    // Records: a loss line every logging step plus the last, an eval line every eval step.
    int losses = 0, evals = 0;
    for (const nlohmann::json& r : metrics_records(run)) {
        losses += r.contains("loss");
        evals += r.contains("eval_accuracy");
    }
    EXPECT_EQ(losses, 14);
    EXPECT_EQ(evals, 2);
    // The written config reloads to the same run, its model config spelt out in full, and
    // model.h5 evaluates to eval_results.json.
    RunConfig again = load_run_config((run / "config.json").string());
    std::unique_ptr<Task> fresh = make_task(again, {false, true});
    nlohmann::json expected = run_config_to_json(parse(raw));
    expected["model"]["config"] = nn::bert_config_to_json(fresh->model_config());
    EXPECT_EQ(run_config_to_json(again), expected);
    EXPECT_EQ(again.model.config->hidden_size, 16);
    load_model_weights(fresh->model(), (run / "model.h5").string());
    nlohmann::json saved;
    std::ifstream(run / "eval_results.json") >> saved;
    EXPECT_EQ(metrics_to_json(fresh->evaluate(16)), saved);
}

// Every training example is read once an epoch, so after whole epochs num_input_tokens_seen is
// the epochs times the training set's tokens, counted here from the TSV: its words (each one in
// the vocabulary, one token each) plus [CLS] and [SEP].
TEST(Trainer, CountsTheInputTokensSeen) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    int64_t epoch_tokens = 0;
    std::ifstream tsv(dir.path() / "train.tsv");
    std::string row;
    std::getline(tsv, row);  // the header
    while (std::getline(tsv, row)) {
        std::istringstream sentence(row.substr(0, row.find('\t')));
        epoch_tokens += 2 + std::distance(std::istream_iterator<std::string>(sentence), {});
    }
    nlohmann::json raw = tiny_config(dir, "run");
    raw["training"]["max_steps"] = 16;  // two epochs of 8 batches
    raw["training"]["logging_steps"] = 8;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    std::map<int64_t, int64_t> seen;
    for (const nlohmann::json& r : metrics_records(dir.path() / "run"))
        if (r.contains("loss")) seen[r["step"].get<int64_t>()] = r["num_input_tokens_seen"].get<int64_t>();
    EXPECT_EQ(seen, (std::map<int64_t, int64_t>{{8, epoch_tokens}, {16, 2 * epoch_tokens}}));
}

// The first update uses lr(0) = 0 (warmup), then HF's linear warmup and decay:
// lr(s) = base · s/2 for s < 2, else base · (12 − s)/10.
TEST(Trainer, LogsTheScheduledLearningRate) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    train_config(tiny_config(dir, "run"));
    for (const nlohmann::json& r : metrics_records(dir.path() / "run")) {
        if (!r.contains("learning_rate")) continue;
        const int64_t s = r["step"].get<int64_t>() - 1;  // updates done before the logged one
        const double expected = s < 2 ? 1e-2 * s / 2 : 1e-2 * (12 - s) / 10.0;
        EXPECT_NEAR(r["learning_rate"].get<double>(), expected, 1e-12) << r.dump();
    }
}

TEST(Trainer, StoppedAndResumedRunIsBitIdentical) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "straight");
    raw["model"]["config"]["hidden_dropout_prob"] = 0.2;  // resume must restore the dropout stream
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);

    raw["training"]["output_dir"] = (dir.path() / "stopped").string();
    TrainOutcome first = train_config(raw, 7);  // stops after step 7: between saves and logs
    EXPECT_EQ(first.status, TrainStatus::interrupted);
    EXPECT_EQ(first.step, 7);
    EXPECT_TRUE(fs::exists(dir.path() / "stopped" / "checkpoint-7.h5"));
    TrainOutcome second = train_config(raw);
    EXPECT_EQ(second.status, TrainStatus::finished);
    expect_same_weights(dir.path() / "straight" / "model.h5", dir.path() / "stopped" / "model.h5");
    EXPECT_EQ(metrics_records(dir.path() / "straight"), metrics_records(dir.path() / "stopped"));
}

TEST(Trainer, NanLossStopsAndKeepsTheLastCheckpoint) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    TrainOutcome outcome = train_config(tiny_config(dir, "run"), 6, MeddlingTask::Action::nan);
    EXPECT_EQ(outcome.status, TrainStatus::diverged);
    EXPECT_EQ(outcome.step, 5);
    EXPECT_NE(outcome.message.find("step 6: the loss is nan"), std::string::npos) << outcome.message;
    EXPECT_NE(outcome.message.find("checkpoint-4.h5"), std::string::npos) << outcome.message;
    const fs::path run = dir.path() / "run";
    EXPECT_EQ(list_checkpoints(run.string()), std::vector<std::string>{(run / "checkpoint-4.h5").string()});
    EXPECT_EQ(load_checkpoint((run / "checkpoint-4.h5").string()).state.step, 4);
    EXPECT_FALSE(fs::exists(run / "model.h5"));
    for (const nlohmann::json& r : metrics_records(run)) EXPECT_LE(r["step"].get<int64_t>(), 5);
}

// A model.init that is not there is named as the config's key, whether the model's shape comes
// from it or from model.config.
TEST(Trainer, AMissingModelInitIsNamedByItsKey) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    raw["model"]["init"] = (dir.path() / "missing.h5").string();
    for (bool shape_from_init : {false, true}) {
        if (shape_from_init) raw["model"].erase("config");
        try {
            make_task(parse(raw), {});
            ADD_FAILURE() << "built a task from a missing model.init";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("test.json: 'model.init' names a missing file: " +
                                                 (dir.path() / "missing.h5").string()),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(Trainer, RefusesToResumeUnderAChangedConfig) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    ASSERT_EQ(train_config(raw, 5).status, TrainStatus::interrupted);
    raw["training"]["learning_rate"] = 2e-2;
    try {
        train_config(raw);
        FAIL() << "resumed under a different learning rate";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/training/learning_rate"), std::string::npos) << e.what();
    }
    raw["training"]["logging_steps"] = 1;  // reporting keys may change
    raw["training"]["learning_rate"] = 1e-2;
    EXPECT_EQ(train_config(raw).status, TrainStatus::finished);
}

// Checkpoints written before training.bf16 existed hold no such key: they resume as FP32 runs,
// and a bf16 run refuses them as it refuses any changed setting.
TEST(Trainer, ResumesACheckpointWrittenBeforeBf16Existed) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    ASSERT_EQ(train_config(raw, 5).status, TrainStatus::interrupted);
    const std::string path = (dir.path() / "run" / "checkpoint-5.h5").string();
    // The file's metadata as such a run wrote it: the config without the key.
    Hdf5Weights file = load_hdf5_weights(path);
    nlohmann::json meta = nlohmann::json::parse(file.config_json);
    ASSERT_TRUE(meta["config"]["training"].contains("bf16"));
    meta["config"]["training"].erase("bf16");
    save_hdf5_weights(path, file.tensors, meta.dump());
    raw["training"]["bf16"] = true;
    EXPECT_THROW(train_config(raw), std::runtime_error);
    raw["training"]["bf16"] = false;
    EXPECT_EQ(train_config(raw).status, TrainStatus::finished);
}

TEST(Trainer, BestMetricDirection) {
    TrainingSettings t;
    EXPECT_TRUE(is_improvement(t, "accuracy", 0.9, 0.8));
    EXPECT_TRUE(is_improvement(t, "eval_loss", 0.3, 0.4));
    EXPECT_FALSE(is_improvement(t, "eval_loss", 0.4, 0.3));
    t.greater_is_better = true;
    EXPECT_TRUE(is_improvement(t, "eval_loss", 0.4, 0.3));
    t.num_train_epochs = 2.5;
    EXPECT_EQ(total_train_steps(t, 8), 20);
    t.max_steps = 3;
    EXPECT_EQ(total_train_steps(t, 8), 3);
}

// Two micro-batches of 8 per step against one batch of 16 (no dropout, the same shuffled
// order): the same loss, gradient norm, schedule and epochs at every step, and the same weights,
// up to FP32 summation order (the mean over 16 taken in one pass or as two halves).
TEST(Trainer, AccumulatedMicroBatchesEqualOneLargerBatch) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "large");
    raw["model"]["config"]["hidden_dropout_prob"] = 0.0;
    raw["model"]["config"]["attention_probs_dropout_prob"] = 0.0;
    raw["training"]["per_device_train_batch_size"] = 16;
    raw["training"]["logging_steps"] = 1;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    raw["training"]["output_dir"] = (dir.path() / "accumulated").string();
    raw["training"]["per_device_train_batch_size"] = 8;
    raw["training"]["gradient_accumulation_steps"] = 2;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);

    const std::vector<nlohmann::json> large = metrics_records(dir.path() / "large"), accumulated = metrics_records(dir.path() / "accumulated");
    ASSERT_EQ(large.size(), accumulated.size());
    for (size_t i = 0; i < large.size(); ++i)
        for (const auto& [key, value] : large[i].items()) {
            ASSERT_TRUE(accumulated[i].contains(key)) << key;
            const double a = value.get<double>(), b = accumulated[i][key].get<double>();
            EXPECT_NEAR(a, b, 1e-5 * std::max(1.0, std::fabs(a))) << key << " at record " << i;
        }
    Hdf5Weights x = load_hdf5_weights((dir.path() / "large" / "model.h5").string());
    Hdf5Weights y = load_hdf5_weights((dir.path() / "accumulated" / "model.h5").string());
    ASSERT_EQ(x.tensors.size(), y.tensors.size());
    for (size_t i = 0; i < x.tensors.size(); ++i)
        qdq::testing::expect_close(y.tensors[i].tensor, x.tensors[i].tensor, 1e-4f, 1e-5f, x.tensors[i].name.c_str());

    raw["training"]["gradient_accumulation_steps"] = 0;
    try {
        parse(raw);
        FAIL() << "accepted gradient_accumulation_steps 0";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("training.gradient_accumulation_steps"), std::string::npos) << e.what();
    }
}

// With bf16 products switched off (QDQ_BF16_KERNEL=none, as on a CPU without a bf16 kernel that
// pays), a bf16 run is the FP32 run bit for bit, and says so once.
TEST(Trainer, Bf16WithoutAKernelRunsFp32AndSaysSoOnce) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "fp32");
    Process fp32 = run_qdqtrain("train " + write_config(dir, "fp32.json", raw));
    ASSERT_EQ(fp32.status, 0) << fp32.output;
    raw["training"]["output_dir"] = (dir.path() / "fallback").string();
    raw["training"]["bf16"] = true;
    Process fallback = qdq::testing::run_command("QDQ_BF16_KERNEL=none " + std::string(QDQTRAIN_PATH) +
                                                 " train " + write_config(dir, "fallback.json", raw));
    ASSERT_EQ(fallback.status, 0) << fallback.output;
    const std::string line = "training.bf16: no bf16 kernel, matrix products run in FP32";
    const size_t at = fallback.output.find(line);
    EXPECT_NE(at, std::string::npos) << fallback.output;
    EXPECT_EQ(fallback.output.find(line, at + 1), std::string::npos) << "said more than once";
    expect_same_weights(dir.path() / "fp32" / "model.h5", dir.path() / "fallback" / "model.h5");
    EXPECT_EQ(metrics_records(dir.path() / "fp32"), metrics_records(dir.path() / "fallback"));
}

// A quantized model trained with bf16 products is scored with FP32 ones, as its INT8 export
// runs: eval_results.json is what FP32 products make of model.h5, and (where a bf16 kernel
// runs) not what bf16 products make of it.
TEST(Trainer, Bf16QatIsScoredWithFp32Products) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "qat");
    raw["training"]["bf16"] = true;
    raw["quantization"] = {{"input", {{"calib_method", "max"}, {"amax", 4.0}}},
                           {"weight", {{"axis", 0}, {"amax", 0.5}}},
                           {"calibrator", "max"}};
    Process qat = run_qdqtrain("train " + write_config(dir, "qat.json", raw));
    ASSERT_EQ(qat.status, 0) << qat.output;
    const fs::path run = dir.path() / "qat";
    std::unique_ptr<Task> task = make_task(load_run_config((run / "config.json").string()), {false, true});
    load_model_weights(task->model(), (run / "model.h5").string());
    nlohmann::json saved;
    std::ifstream(run / "eval_results.json") >> saved;
    {
        MatmulPrecisionGuard fp32(MatmulPrecision::F32);
        EXPECT_EQ(metrics_to_json(task->evaluate(16)), saved);
    }
    if (bf16_kernel() == Bf16Kernel::None) GTEST_SKIP() << "no bf16 kernel here: bf16 products are FP32 ones";
    MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
    EXPECT_NE(task->evaluate(16).scores.at("eval_loss"), saved["eval_loss"].get<double>());
}
