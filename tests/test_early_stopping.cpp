// Early stopping as HF's EarlyStoppingCallback does it: training ends at the evaluation that
// makes early_stopping_patience in a row without beating the best metric before it by more than
// early_stopping_threshold, and the best model is the one kept. The reference is that rule
// replayed here on the run's own evaluation records. A run stopped between evaluations resumes
// with its count and ends where the uninterrupted one ends, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "tests/support/meddling_task.h"
#include "tests/support/metrics_records.h"
#include "tests/support/same_weights.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/trainer.h"

using namespace qdq;
using qdq::testing::metrics_records;
using qdq::testing::tiny_config;
using qdq::testing::train_config;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

namespace {

struct Replay {
    int64_t stop_step = -1;    // the evaluation that ends the run; -1: none does
    int64_t first_miss = -1;   // the first evaluation that counts as one without improvement
    double best = 0;
};

// HF's check_metric_value over the eval_loss records, lower being better.
Replay replay_early_stopping(const std::vector<nlohmann::json>& records, int64_t patience, double threshold) {
    Replay out;
    std::optional<double> best;
    int64_t misses = 0;
    for (const nlohmann::json& r : records) {
        if (!r.contains("eval_loss")) continue;
        const double loss = r["eval_loss"].get<double>();
        const bool beaten = !best || (loss < *best && std::abs(loss - *best) > threshold);
        misses = beaten ? 0 : misses + 1;
        if (misses == 1 && out.first_miss < 0) out.first_miss = r["step"].get<int64_t>();
        if (!best || loss < *best) best = loss;
        if (misses >= patience) {
            out.stop_step = r["step"].get<int64_t>();
            break;
        }
    }
    out.best = best.value_or(NAN);
    return out;
}

// The tiny task's loss falls from step 30 or so, ever more slowly, and creeps up again late.
nlohmann::json early_stopping_config(const qdq::testing::TempDir& dir, const std::string& out, double threshold) {
    nlohmann::json raw = tiny_config(dir, out);
    raw["model"]["config"]["hidden_dropout_prob"] = 0.2;
    raw["training"]["max_steps"] = 300;
    raw["training"]["eval_steps"] = 6;
    raw["training"]["save_steps"] = 6;
    raw["training"]["load_best_model_at_end"] = true;
    raw["training"]["metric_for_best_model"] = "loss";
    raw["training"]["early_stopping_patience"] = 3;
    raw["training"]["early_stopping_threshold"] = threshold;
    return raw;
}

}  // namespace

TEST(Trainer, EarlyStoppingEndsAtThePatiencesEvaluationAndKeepsTheBest) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = early_stopping_config(dir, "straight", 0.0);
    const TrainOutcome straight = train_config(raw);
    ASSERT_EQ(straight.status, TrainStatus::finished);
    const std::vector<nlohmann::json> records = metrics_records(dir.path() / "straight");
    const Replay expected = replay_early_stopping(records, 3, 0.0);
    ASSERT_GT(expected.stop_step, 0) << "the tiny task should stop improving within 300 steps";
    EXPECT_EQ(straight.step, expected.stop_step);
    EXPECT_EQ(records.back()["step"].get<int64_t>(), expected.stop_step);
    nlohmann::json kept;
    std::ifstream(dir.path() / "straight" / "eval_results.json") >> kept;
    EXPECT_EQ(kept["eval_loss"].get<double>(), expected.best);  // the best model, scored again
    EXPECT_NE(records.back()["eval_loss"].get<double>(), expected.best) << "the last model should not be the best";

    // Improvements of no more than the threshold count against the patience, though the best
    // still moves to them: the run ends sooner.
    const TrainOutcome thresholded = train_config(early_stopping_config(dir, "thresholded", 2e-5));
    const Replay sooner = replay_early_stopping(metrics_records(dir.path() / "thresholded"), 3, 2e-5);
    EXPECT_EQ(thresholded.step, sooner.stop_step);
    EXPECT_LT(sooner.stop_step, expected.stop_step);

    // Stopped after the first evaluation that counts against the patience: the count must come
    // back from the checkpoint, or the resumed run would stop one evaluation later.
    ASSERT_LT(expected.first_miss + 1, expected.stop_step);
    raw["training"]["output_dir"] = (dir.path() / "stopped").string();
    EXPECT_EQ(train_config(raw, expected.first_miss + 1).status, TrainStatus::interrupted);
    EXPECT_EQ(train_config(raw).status, TrainStatus::finished);
    qdq::testing::expect_same_weights(dir.path() / "straight" / "model.h5", dir.path() / "stopped" / "model.h5");
    EXPECT_EQ(metrics_records(dir.path() / "stopped"), records);
}
