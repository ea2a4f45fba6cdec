// reduce_lr_on_plateau in the trainer: each update takes the rate that the evaluations before it
// have left, as HF's Trainer steps torch's ReduceLROnPlateau (checked against torch in
// test_optim.cpp) with eval_loss after each evaluation; a run stopped between evaluations resumes
// with the plateau's state and ends bit-identical to a run never stopped; a task without the
// metric it follows is refused before the run starts.
#include <gtest/gtest.h>

#include <filesystem>

#include "optim/plateau.h"
#include "tests/support/meddling_task.h"
#include "tests/support/metrics_records.h"
#include "tests/support/same_weights.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/run_schedule.h"
#include "trainers/trainer.h"

using namespace qdq;
using qdq::testing::metrics_records;
using qdq::testing::tiny_config;
using qdq::testing::train_config;
using qdq::testing::write_task_files;

TEST(Trainer, ReduceLrOnPlateauFollowsTheEvaluationsAndResumes) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "straight");
    raw["model"]["config"]["hidden_dropout_prob"] = 0.2;
    raw["training"]["lr_scheduler_type"] = "reduce_lr_on_plateau";
    raw["training"]["warmup_steps"] = 0;
    raw["training"]["logging_steps"] = 1;
    raw["training"]["eval_steps"] = 2;
    // An evaluation improves only on a loss under 0.8 of the best: most of them cut the rate.
    raw["training"]["lr_scheduler_kwargs"] = {{"factor", 0.5}, {"patience", 0}, {"threshold", 0.2}};
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);

    PlateauOptions options;
    options.factor = 0.5;
    options.patience = 0;
    options.threshold = 0.2;
    PlateauState expected = plateau_start(1e-2);
    int updates = 0, evaluations = 0;
    for (const nlohmann::json& r : metrics_records(dir.path() / "straight")) {
        if (r.contains("learning_rate")) {
            EXPECT_EQ(r["learning_rate"].get<double>(), expected.lr) << r.dump();
            ++updates;
        }
        if (r.contains("eval_loss")) {
            plateau_step(options, expected, r["eval_loss"].get<double>());
            ++evaluations;
        }
    }
    EXPECT_EQ(updates, 12);
    EXPECT_EQ(evaluations, 6);
    EXPECT_LT(expected.lr, 1e-2 / 4) << "the run should have cut its rate at least three times";

    raw["training"]["output_dir"] = (dir.path() / "stopped").string();
    EXPECT_EQ(train_config(raw, 7).status, TrainStatus::interrupted);  // after step 7: a cut or two in
    EXPECT_EQ(train_config(raw).status, TrainStatus::finished);
    qdq::testing::expect_same_weights(dir.path() / "straight" / "model.h5", dir.path() / "stopped" / "model.h5");
    EXPECT_EQ(metrics_records(dir.path() / "straight"), metrics_records(dir.path() / "stopped"));
}

// HF's Trainer would fail at the first evaluation (a KeyError); here the run does not start.
TEST(Trainer, ReduceLrOnPlateauNeedsAMetricTheTaskReports) {
    RunConfig config;
    config.source = "qa.json";
    config.data.task = TaskKind::squad;
    config.training.lr_scheduler_type = ScheduleName::ReduceLrOnPlateau;
    config.training.warmup_steps = 0;
    try {
        run_schedule(config, 10);
        ADD_FAILURE() << "squad reports no loss";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("qa.json: training.lr_scheduler_type \"reduce_lr_on_plateau\" follows "
                                             "training.metric_for_best_model, \"loss\" unless set, and data.task "
                                             "squad reports no 'loss'"),
                  std::string::npos)
            << e.what();
    }
    config.training.metric_for_best_model = "f1";
    EXPECT_EQ(run_schedule(config, 10).plateau_metric, "f1");
}
