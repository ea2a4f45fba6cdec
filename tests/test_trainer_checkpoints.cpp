// What a run keeps and reads back in its output directory: an unreadable newest checkpoint is
// set aside and the run resumes from the one before it, ending bit-identical to a run never
// interrupted; a finished run run again adds nothing; training.save_total_limit says how many
// checkpoints a finished run keeps beside model.h5, and never removes the newest or the best
// (with load_best_model_at_end or metric_for_best_model);
// HF's dataloader_drop_last and save_only_model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/meddling_task.h"
#include "tests/support/metrics_records.h"
#include "tests/support/same_weights.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

using namespace qdq;
using qdq::testing::evaluated_steps;
using qdq::testing::expect_same_weights;
using qdq::testing::metrics_records;
using qdq::testing::TempDir;
using qdq::testing::tiny_config;
using qdq::testing::train_config;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

namespace {

std::string file_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> checkpoint_names(const fs::path& dir) {
    std::vector<std::string> names;
    for (const std::string& path : list_checkpoints(dir.string())) names.push_back(fs::path(path).filename().string());
    return names;
}

// The tiny run (12 steps, a checkpoint every 4), finished in `out` keeping all three checkpoints.
nlohmann::json finished_run(const TempDir& dir, const std::string& out) {
    nlohmann::json raw = tiny_config(dir, out);
    raw["model"]["config"]["hidden_dropout_prob"] = 0.2;  // resume must restore the dropout stream
    raw["training"]["save_total_limit"] = 3;
    EXPECT_EQ(train_config(raw).status, TrainStatus::finished);
    return raw;
}

// The step of the best evaluation in `dir`'s log by eval_accuracy, the first of equals.
int64_t best_accuracy_step(const fs::path& dir) {
    int64_t best_step = -1;
    double best = -1;
    for (const nlohmann::json& r : metrics_records(dir))
        if (r.contains("eval_accuracy") && r["eval_accuracy"].get<double>() > best) {
            best = r["eval_accuracy"].get<double>();
            best_step = r["step"].get<int64_t>();
        }
    return best_step;
}

}  // namespace

// A run stopped after step 8 whose checkpoint-8.h5 was cut short (a full disk, a killed copy):
// it resumes from checkpoint-4.h5, says so, keeps the cut file aside, and ends as the run that
// never stopped.
TEST(Trainer, ResumesFromTheCheckpointBeforeAnUnreadableNewestOne) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = finished_run(dir, "straight");
    const fs::path straight = dir.path() / "straight", cut = dir.path() / "cut";
    fs::create_directories(cut);
    for (const char* name : {"checkpoint-4.h5", "checkpoint-8.h5", "metrics.jsonl"}) fs::copy_file(straight / name, cut / name);
    fs::resize_file(cut / "checkpoint-8.h5", fs::file_size(cut / "checkpoint-8.h5") / 2);

    raw["training"]["output_dir"] = cut.string();
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    const TrainOutcome outcome = train_config(raw);
    const std::string said = ::testing::internal::GetCapturedStderr() + ::testing::internal::GetCapturedStdout();
    ASSERT_EQ(outcome.status, TrainStatus::finished);
    EXPECT_NE(said.find("checkpoint-8.h5 cannot be read"), std::string::npos) << said;
    EXPECT_NE(said.find("resuming " + cut.string() + " at step 4"), std::string::npos) << said;
    EXPECT_TRUE(fs::exists(cut / "checkpoint-8.h5.unreadable"));
    expect_same_weights(straight / "model.h5", cut / "model.h5");
    EXPECT_EQ(metrics_records(straight), metrics_records(cut));
}

TEST(Trainer, RefusesToResumeWhenNoCheckpointCanBeRead) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "cut");
    const fs::path cut = dir.path() / "cut";
    fs::create_directories(cut);
    std::ofstream(cut / "checkpoint-4.h5") << "not HDF5";
    try {
        train_config(raw);
        FAIL() << "started over beside an unreadable checkpoint";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("none of its 1 checkpoints can be read; --no-resume"), std::string::npos)
            << e.what();
    }
}

// Running a finished run again returns its metrics and leaves every file as it was.
TEST(Trainer, RunningAFinishedRunAgainAddsNothing) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = finished_run(dir, "run");
    const fs::path run = dir.path() / "run";
    const std::string log = file_bytes(run / "metrics.jsonl"), model = file_bytes(run / "model.h5");
    const nlohmann::json metrics = nlohmann::json::parse(file_bytes(run / "eval_results.json"));
    raw["training"]["eval_steps"] = 2;  // a reporting key: still the same run
    const TrainOutcome again = train_config(raw);
    EXPECT_EQ(again.status, TrainStatus::finished);
    EXPECT_EQ(metrics_to_json(again.metrics), metrics);
    EXPECT_EQ(file_bytes(run / "metrics.jsonl"), log);
    EXPECT_EQ(file_bytes(run / "model.h5"), model);
}

// A finished run that kept no checkpoint (save_total_limit 0, the pipeline's default) is still a
// finished run: the same directory under another config is refused, naming the key, and nothing
// of the run is lost.
TEST(Trainer, AFinishedRunIsNotOverwrittenByAnotherConfig) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    raw["training"]["save_total_limit"] = 0;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    const fs::path run = dir.path() / "run";
    ASSERT_TRUE(checkpoint_names(run).empty());
    const std::string log = file_bytes(run / "metrics.jsonl"), model = file_bytes(run / "model.h5");
    const std::string config = file_bytes(run / "config.json");
    raw["training"]["learning_rate"] = 2e-2;
    try {
        train_config(raw);
        FAIL() << "trained over a finished run of another config";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/training/learning_rate"), std::string::npos) << e.what();
    }
    EXPECT_EQ(file_bytes(run / "metrics.jsonl"), log);
    EXPECT_EQ(file_bytes(run / "model.h5"), model);
    EXPECT_EQ(file_bytes(run / "config.json"), config);
}

// Hugging Face's save_total_limit: the newest N while training; set, it is also what a finished
// run keeps (0: only model.h5); unset, the newest two.
TEST(Trainer, AFinishedRunKeepsSaveTotalLimitCheckpoints) {
    TempDir dir;
    write_task_files(dir);
    const std::vector<std::pair<nlohmann::json, std::vector<std::string>>> cases = {
        {nullptr, {"checkpoint-8.h5", "checkpoint-12.h5"}},
        {0, {}},
        {1, {"checkpoint-12.h5"}},
    };
    for (const auto& [limit, kept] : cases) {
        const std::string out = "limit_" + limit.dump();
        nlohmann::json raw = tiny_config(dir, out);
        if (!limit.is_null()) raw["training"]["save_total_limit"] = limit;
        ASSERT_EQ(train_config(raw).status, TrainStatus::finished) << limit;
        EXPECT_EQ(checkpoint_names(dir.path() / out), kept) << "save_total_limit " << limit;
        EXPECT_TRUE(fs::exists(dir.path() / out / "model.h5"));
    }
    // 0 keeps none, the best that load_best_model_at_end loaded included: model.h5 holds it.
    nlohmann::json best = tiny_config(dir, "best_limit_0");
    best["training"]["save_total_limit"] = 0;
    best["training"]["load_best_model_at_end"] = true;
    ASSERT_EQ(train_config(best).status, TrainStatus::finished);
    EXPECT_EQ(checkpoint_names(dir.path() / "best_limit_0"), std::vector<std::string>{});
    nlohmann::json raw = tiny_config(dir, "negative");
    raw["training"]["save_total_limit"] = -1;
    EXPECT_THROW(train_config(raw), std::runtime_error);
}

// Under save_total_limit 1 with load_best_model_at_end, Hugging Face's Trainer keeps the best
// checkpoint and the newest while training, since the run resumes from the newest, and the best
// alone once finished. Stopped after step 10 (evaluated at 4 and 8), the run keeps both, resumes
// from step 10 and ends as the run never stopped.
TEST(Trainer, UnderALimitOfOneTheBestAndTheNewestCheckpointsAreKept) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "straight");
    raw["training"]["save_total_limit"] = 1;
    raw["training"]["load_best_model_at_end"] = true;
    raw["training"]["eval_steps"] = 4;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    const fs::path straight = dir.path() / "straight", stopped = dir.path() / "stopped";
    EXPECT_EQ(checkpoint_names(straight), std::vector<std::string>{checkpoint_name(best_accuracy_step(straight))});

    raw["training"]["output_dir"] = stopped.string();
    ASSERT_EQ(train_config(raw, 10).status, TrainStatus::interrupted);
    const int64_t best = best_accuracy_step(stopped);
    ASSERT_TRUE(best == 4 || best == 8) << best;
    EXPECT_EQ(checkpoint_names(stopped), (std::vector<std::string>{checkpoint_name(best), "checkpoint-10.h5"}));
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    EXPECT_EQ(checkpoint_names(stopped), checkpoint_names(straight));
    expect_same_weights(straight / "model.h5", stopped / "model.h5");
    EXPECT_EQ(metrics_records(straight), metrics_records(stopped));
}

// Hugging Face's Trainer tracks the best checkpoint whenever metric_for_best_model is given, and
// keeps it out of save_total_limit's rotation whether or not it loads it at the end: as above,
// with the best (step 4 or 8) kept beside the newest while training and alone once finished.
TEST(Trainer, AGivenMetricForBestModelKeepsTheBestCheckpointUnderALimit) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "metric");
    raw["training"]["save_total_limit"] = 1;
    raw["training"]["metric_for_best_model"] = "accuracy";
    raw["training"]["eval_steps"] = 4;
    const fs::path out = dir.path() / "metric";
    ASSERT_EQ(train_config(raw, 10).status, TrainStatus::interrupted);
    const int64_t best = best_accuracy_step(out);
    ASSERT_TRUE(best == 4 || best == 8) << best;
    EXPECT_EQ(checkpoint_names(out), (std::vector<std::string>{checkpoint_name(best), "checkpoint-10.h5"}));
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    EXPECT_EQ(checkpoint_names(out), std::vector<std::string>{checkpoint_name(best_accuracy_step(out))});
}

// Hugging Face's evaluation_strategy (or eval_strategy) and save_strategy. The tiny run: 12
// steps, 8 a epoch, logging every 3, eval_steps 5, save_steps 4. "steps" without eval_steps
// evaluates every logging_steps; "no" evaluates once, at the end, and saves no checkpoint.
TEST(Trainer, EvaluationAndSaveStrategiesAreHuggingFaces) {
    TempDir dir;
    write_task_files(dir);
    const auto evaluated_and_kept = [&](const std::string& out, const nlohmann::json& keys) {
        nlohmann::json raw = tiny_config(dir, out);
        raw["training"]["save_total_limit"] = 5;
        for (const auto& [key, value] : keys.items()) raw["training"][key] = value;
        EXPECT_EQ(train_config(raw).status, TrainStatus::finished) << out;
        return std::pair{evaluated_steps(dir.path() / out), checkpoint_names(dir.path() / out)};
    };
    using Steps = std::vector<int64_t>;
    using Names = std::vector<std::string>;
    const Names every_4 = {"checkpoint-4.h5", "checkpoint-8.h5", "checkpoint-12.h5"};
    EXPECT_EQ(evaluated_and_kept("unset", {}), std::pair(Steps{5, 10, 12}, every_4));  // as eval_steps and save_steps say
    EXPECT_EQ(evaluated_and_kept("steps", {{"evaluation_strategy", "steps"}, {"eval_steps", 0}}), std::pair(Steps{3, 6, 9, 12}, every_4));
    EXPECT_EQ(evaluated_and_kept("epoch", {{"eval_strategy", "epoch"}, {"save_strategy", "epoch"}}),
              std::pair(Steps{8, 12}, Names{"checkpoint-8.h5", "checkpoint-12.h5"}));
    EXPECT_EQ(evaluated_and_kept("no", {{"evaluation_strategy", "no"}, {"save_strategy", "no"}}), std::pair(Steps{12}, Names{}));
    // Counts below 1 are shares of the run's 12 steps, rounded up: eval every 3, save every 6.
    EXPECT_EQ(evaluated_and_kept("shares", {{"eval_steps", 0.25}, {"save_steps", 0.45}}),
              std::pair(Steps{3, 6, 9, 12}, Names{"checkpoint-6.h5", "checkpoint-12.h5"}));
    EXPECT_TRUE(fs::exists(dir.path() / "no" / "model.h5"));

    nlohmann::json raw = tiny_config(dir, "refused");
    raw["training"]["evaluation_strategy"] = "steps";
    raw["training"]["eval_strategy"] = "steps";
    EXPECT_THROW(train_config(raw), std::runtime_error);
    raw["training"].erase("eval_strategy");
    raw["training"]["evaluation_strategy"] = "no";
    raw["training"]["load_best_model_at_end"] = true;
    EXPECT_THROW(train_config(raw), std::runtime_error);
    EXPECT_FALSE(fs::exists(dir.path() / "refused"));
}

// HF's logging_strategy, logging_first_step, eval_delay and eval_on_start on the same tiny run (12 steps, 8 an
// epoch, logging_steps 3, eval_steps 5): the steps a loss is logged at and those evaluated at.
// The last step is always logged and evaluated.
TEST(Trainer, LoggingAndEvaluationKeysAreHuggingFaces) {
    TempDir dir;
    write_task_files(dir);
    using Steps = std::vector<int64_t>;
    const auto logged_and_evaluated = [&](const std::string& out, const nlohmann::json& keys) {
        nlohmann::json raw = tiny_config(dir, out);
        for (const auto& [key, value] : keys.items()) raw["training"][key] = value;
        EXPECT_EQ(train_config(raw).status, TrainStatus::finished) << out;
        Steps logged, evaluated;
        for (const nlohmann::json& r : metrics_records(dir.path() / out)) {
            if (r.contains("loss")) logged.push_back(r["step"].get<int64_t>());
            if (r.contains("eval_accuracy")) evaluated.push_back(r["step"].get<int64_t>());
        }
        return std::pair{logged, evaluated};
    };
    EXPECT_EQ(logged_and_evaluated("unset", {}), std::pair(Steps{3, 6, 9, 12}, Steps{5, 10, 12}));
    EXPECT_EQ(logged_and_evaluated("first", {{"logging_first_step", true}}), std::pair(Steps{1, 3, 6, 9, 12}, Steps{5, 10, 12}));
    EXPECT_EQ(logged_and_evaluated("epoch", {{"logging_strategy", "epoch"}}), std::pair(Steps{8, 12}, Steps{5, 10, 12}));
    EXPECT_EQ(logged_and_evaluated("no", {{"logging_strategy", "no"}}), std::pair(Steps{12}, Steps{5, 10, 12}));
    EXPECT_EQ(logged_and_evaluated("share", {{"logging_steps", 0.4}}), std::pair(Steps{5, 10, 12}, Steps{5, 10, 12}));
    EXPECT_EQ(logged_and_evaluated("start", {{"eval_on_start", true}}), std::pair(Steps{3, 6, 9, 12}, Steps{0, 5, 10, 12}));
    EXPECT_EQ(logged_and_evaluated("delay", {{"eval_delay", 6}}), std::pair(Steps{3, 6, 9, 12}, Steps{10, 12}));
    EXPECT_EQ(logged_and_evaluated("delay_epochs", {{"eval_strategy", "epoch"}, {"eval_delay", 1.5}}),
              std::pair(Steps{3, 6, 9, 12}, Steps{12}));
}

// label_smoothing_factor reaches the training loss and the evaluation loss (HF smooths both); the
// loss itself is checked against HF's formula in test_bert.
TEST(Trainer, LabelSmoothingSmoothsTheTrainingAndEvaluationLosses) {
    TempDir dir;
    write_task_files(dir);
    const auto losses = [&](const std::string& out, double epsilon) {
        nlohmann::json raw = tiny_config(dir, out);
        raw["training"]["label_smoothing_factor"] = epsilon;
        raw["training"]["max_steps"] = 1;
        EXPECT_EQ(train_config(raw).status, TrainStatus::finished) << out;
        std::pair<double, double> found{0, 0};
        for (const nlohmann::json& r : metrics_records(dir.path() / out)) {
            if (r.contains("loss")) found.first = r["loss"].get<double>();
            if (r.contains("eval_loss")) found.second = r["eval_loss"].get<double>();
        }
        return found;
    };
    const auto [train_plain, eval_plain] = losses("plain", 0);
    const auto [train_smoothed, eval_smoothed] = losses("smoothed", 0.5);
    EXPECT_NE(train_smoothed, train_plain);
    EXPECT_NE(eval_smoothed, eval_plain);
}

// HF's data_seed draws the order of the training examples; unset, it is seed's.
TEST(Trainer, DataSeedDrawsTheExampleOrder) {
    TempDir dir;
    write_task_files(dir);
    const auto losses = [&](const std::string& out, const nlohmann::json& data_seed) {
        nlohmann::json raw = tiny_config(dir, out);
        if (!data_seed.is_null()) raw["training"]["data_seed"] = data_seed;
        EXPECT_EQ(train_config(raw).status, TrainStatus::finished) << out;
        std::vector<double> out_losses;
        for (const nlohmann::json& r : metrics_records(dir.path() / out))
            if (r.contains("loss")) out_losses.push_back(r["loss"].get<double>());
        return out_losses;
    };
    const std::vector<double> unset = losses("unset", nullptr);
    EXPECT_EQ(losses("same", 7), unset);  // tiny_config's seed
    EXPECT_NE(losses("other", 8), unset);
}

// HF's dataloader_drop_last: 64 examples in batches of 10 are 7 steps an epoch, 6 without the
// short one; logged at each epoch's end over two epochs.
TEST(Trainer, DataloaderDropLastDropsEachEpochsShortBatch) {
    TempDir dir;
    write_task_files(dir);
    const auto epoch_ends = [&](const std::string& out, bool drop_last) {
        nlohmann::json raw = tiny_config(dir, out);
        raw["training"].erase("max_steps");
        raw["training"]["num_train_epochs"] = 2;
        raw["training"]["per_device_train_batch_size"] = 10;
        raw["training"]["logging_strategy"] = "epoch";
        raw["training"]["dataloader_drop_last"] = drop_last;
        EXPECT_EQ(train_config(raw).status, TrainStatus::finished) << out;
        std::vector<std::pair<int64_t, double>> ends;
        for (const nlohmann::json& r : metrics_records(dir.path() / out))
            if (r.contains("loss")) ends.emplace_back(r["step"].get<int64_t>(), r["epoch"].get<double>());
        return ends;
    };
    using Ends = std::vector<std::pair<int64_t, double>>;
    EXPECT_EQ(epoch_ends("kept", false), (Ends{{7, 1.0}, {14, 2.0}}));
    EXPECT_EQ(epoch_ends("dropped", true), (Ends{{6, 1.0}, {12, 2.0}}));
}

// HF's save_only_model: checkpoints without the optimizer's moments, a third of the size; the
// training is the same to the bit, and a run stopped under it refuses to resume rather than
// continue with fresh moments.
TEST(Trainer, SaveOnlyModelCheckpointsHoldTheModelAndDoNotResume) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = finished_run(dir, "full");
    raw["training"]["output_dir"] = (dir.path() / "model_only").string();
    raw["training"]["save_only_model"] = true;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    const fs::path full = dir.path() / "full" / "checkpoint-8.h5", model_only = dir.path() / "model_only" / "checkpoint-8.h5";
    EXPECT_FALSE(load_checkpoint(full.string()).optimizer.empty());
    EXPECT_TRUE(load_checkpoint(model_only.string()).optimizer.empty());
    EXPECT_LT(fs::file_size(model_only), fs::file_size(full) / 2);
    expect_same_weights(dir.path() / "full" / "model.h5", dir.path() / "model_only" / "model.h5");

    raw["training"]["output_dir"] = (dir.path() / "stopped").string();
    ASSERT_EQ(train_config(raw, 7).status, TrainStatus::interrupted);
    try {
        train_config(raw);
        ADD_FAILURE() << "resumed from a checkpoint without the optimizer's state";
    } catch (const std::runtime_error& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("checkpoint-7.h5"), std::string::npos) << message;
        EXPECT_NE(message.find("save_only_model"), std::string::npos) << message;
    }
    // Saving only the model is no change of the run: a full checkpoint resumes under it.
    raw["training"]["output_dir"] = (dir.path() / "full_then_model_only").string();
    raw["training"]["save_only_model"] = false;
    ASSERT_EQ(train_config(raw, 7).status, TrainStatus::interrupted);
    raw["training"]["save_only_model"] = true;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    expect_same_weights(dir.path() / "full" / "model.h5", dir.path() / "full_then_model_only" / "model.h5");
}
