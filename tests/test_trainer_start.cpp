// How a run starts in its output directory: over an earlier run there (train's --no-resume),
// which must not leave that run's results to be read as the new one's; from step 0 again after
// an attempt that saved nothing, without a second step-0 record; refused a resume whose config
// changes the evaluations that steer it (reduce_lr_on_plateau, early stopping); and refused a
// training set that gives no batch, where the loop would wait for one forever.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/meddling_task.h"
#include "tests/support/metrics_records.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/trainer.h"

using namespace qdq;
using qdq::testing::evaluated_steps;
using qdq::testing::MeddlingTask;
using qdq::testing::metrics_records;
using qdq::testing::TempDir;
using qdq::testing::tiny_config;
using qdq::testing::train_config;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

namespace {

// train_config without resume (train's --no-resume), stopped after step `stop_at`.
TrainOutcome train_over(const nlohmann::json& raw, int64_t stop_at) {
    return train_config(raw, stop_at, MeddlingTask::Action::stop, {.resume = false});
}

}  // namespace

// A finished run at one learning rate, started over at another and stopped after step 2: its
// result must be gone, or running the config again would report it as the new run's, finished.
// Started over once more and stopped after step 1, then run again, the new run resumes and ends
// as one never stopped; its log holds its own records alone, one evaluation at step 0
// (eval_on_start) though the earlier run and both attempts wrote one there.
TEST(Trainer, AStartOverLeavesNothingOfTheEarlierRun) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    raw["training"]["eval_on_start"] = true;
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    const fs::path run = dir.path() / "run";
    ASSERT_TRUE(fs::exists(run / "model.h5"));

    raw["training"]["learning_rate"] = 3e-3;
    ASSERT_EQ(train_over(raw, 2).status, TrainStatus::interrupted);
    EXPECT_FALSE(fs::exists(run / "model.h5"));
    EXPECT_FALSE(fs::exists(run / "eval_results.json"));
    ASSERT_EQ(train_over(raw, 1).status, TrainStatus::interrupted);
    const TrainOutcome resumed = train_config(raw);
    ASSERT_EQ(resumed.status, TrainStatus::finished);

    const fs::path straight = dir.path() / "straight";
    raw["training"]["output_dir"] = straight.string();
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    EXPECT_EQ(evaluated_steps(run), (std::vector<int64_t>{0, 5, 10, 12}));
    EXPECT_EQ(metrics_records(straight), metrics_records(run));
}

// Under reduce_lr_on_plateau the evaluations set the rate: a resume that evaluates at other steps
// or by another metric would not continue the run, and is refused naming the key. A plain
// schedule resumes with either change, as it only reports differently.
TEST(Trainer, AResumeMayNotChangeTheEvaluationsThatSteerTheRun) {
    TempDir dir;
    write_task_files(dir);
    const auto stopped_at_7 = [&](const std::string& out, const std::string& schedule) {
        nlohmann::json raw = tiny_config(dir, out);
        raw["training"]["lr_scheduler_type"] = schedule;
        raw["training"]["warmup_steps"] = 0;
        raw["training"]["eval_steps"] = 2;
        EXPECT_EQ(train_config(raw, 7).status, TrainStatus::interrupted);
        return raw;
    };
    for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
             {"eval_steps", 3}, {"metric_for_best_model", "accuracy"}}) {
        nlohmann::json raw = stopped_at_7("plateau_" + key, "reduce_lr_on_plateau");
        raw["training"][key] = value;
        try {
            train_config(raw);
            ADD_FAILURE() << key << ": the resume was not refused";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("/training/" + key), std::string::npos) << e.what();
        }
        nlohmann::json linear = stopped_at_7("linear_" + key, "linear");
        linear["training"][key] = value;
        EXPECT_EQ(train_config(linear).status, TrainStatus::finished) << key;
    }
}

// HF's Trainer warns and stops at step 0 when an epoch holds no batch; here the run is refused
// before it starts, naming the keys, where the loop would otherwise wait forever for a batch.
TEST(Trainer, ATrainingSetThatGivesNoBatchIsRefused) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "dropped");
    raw["data"]["max_train_examples"] = 3;
    raw["training"]["dataloader_drop_last"] = true;
    try {
        train_config(raw);
        ADD_FAILURE() << "3 examples in batches of 8 with dataloader_drop_last give no batch";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("training.dataloader_drop_last drops every batch: the 3 training examples "
                                             "are fewer than one batch of 8"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_FALSE(fs::exists(dir.path() / "dropped" / "config.json"));
    raw["training"]["dataloader_drop_last"] = false;
    EXPECT_EQ(train_config(raw).status, TrainStatus::finished);
}
