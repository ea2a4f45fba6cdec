// The learning rate of each update of a run: the schedule's function of the step
// (optim/schedule.h), or under reduce_lr_on_plateau the rate the evaluations so far have left
// (optim/plateau.h), which the trainer's state carries from checkpoint to checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "optim/plateau.h"
#include "optim/schedule.h"
#include "trainers/checkpoint.h"
#include "trainers/run_config.h"
#include "trainers/task_metrics.h"

namespace qdq {

struct RunSchedule {
    ScheduleOptions options;
    std::optional<PlateauOptions> plateau;  // reduce_lr_on_plateau's
    std::string plateau_metric;             // the score it follows, as the metrics name it
};

// The schedule over the run's `total_steps`. Throws ConfigError naming the key for what the
// config's loading could not see: a warmup_stable_decay whose warmup and decay outlast the run, or
// reduce_lr_on_plateau following a metric the task does not report (HF's metric_for_best_model,
// "loss" unless set: squad reports none).
RunSchedule run_schedule(const RunConfig& config, int64_t total_steps);

// A run's state as it starts at step 0: under reduce_lr_on_plateau, at the base rate.
void start_schedule(const RunSchedule& schedule, TrainerState& state);

// The rate of the update that follows state.step updates.
double scheduled_rate(const RunSchedule& schedule, const TrainerState& state);

// What an evaluation during training does to the rate: under reduce_lr_on_plateau, one step of it
// with the metric it follows, as HF's Trainer steps it after each evaluation (not after
// eval_on_start's, which it skips).
void follow_evaluation(const RunSchedule& schedule, TrainerState& state, const Metrics& metrics);

}  // namespace qdq
