// The training loop, as Hugging Face's Trainer runs it: per step forward, loss and backward of
// gradient_accumulation_steps micro-batches (each loss divided by their number), clip by global
// norm, AdamW at the schedule's rate; logs as logging_strategy says (every logging_steps
// unless set); evaluation with the task's metrics and checkpoints as evaluation_strategy and
// save_strategy say (every eval_steps and save_steps, or at each epoch's end:
// trainers/interval_strategy.h; eval_delay, eval_on_start), keeping the last save_total_limit
// and the best one. After each evaluation, reduce_lr_on_plateau may cut the rate
// (trainers/run_schedule.h), and early stopping may end the run (early_stopping_patience).
//
// Everything the rest of the run depends on is in the checkpoint: weights, AdamW moments, the
// step (the schedule is a function of it, or else the plateau's state is saved), the dropout
// and data RNG states, the data loader's position, the logging window and the early-stopping
// count. A run resumed from its newest checkpoint therefore computes
// the same numbers as the run that never stopped, bit for bit, on the same machine and threads.
//
// Under mpirun (parallel/communicator.h) every rank runs train() alike: the same weights from
// the same seed, its share of each global batch (per_device_train_batch_size × ranks ×
// gradient_accumulation_steps examples a step), gradients summed across ranks during backward
// (parallel/grad_reducer.h). Rank 0 alone writes the log, checkpoints and results; a checkpoint
// holds every rank's random streams, and resumes with the same number of ranks.
//
// Output directory: config.json (the resolved config), metrics.jsonl, checkpoint-<step>.h5,
// with report_to tensorboard TensorBoard's event files (in logging_dir, by default runs/), and
// at the end model.h5 (the final weights, or the best ones with load_best_model_at_end) and
// eval_results.json (that model's metrics). A log record's learning_rate is the rate its step
// used; Hugging Face's Trainer logs the scheduler's rate after stepping it, the next step's.
#pragma once

#include <cstdint>
#include <string>

#include "data/loader.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"
#include "parallel/grad_reducer.h"
#include "trainers/run_config.h"
#include "trainers/task.h"

namespace qdq {

enum class TrainStatus {
    finished,
    diverged,     // a loss or gradient norm was NaN or infinite; nothing was saved after it
    interrupted,  // request_stop(): a checkpoint of the last completed step was written
};

struct TrainOutcome {
    TrainStatus status = TrainStatus::finished;
    int64_t step = 0;
    Metrics metrics{};       // the final evaluation (finished runs with an eval set)
    std::string message;     // why a run did not finish
};

// The progress bar follows set_progress_bars_shown (trainers/progress_bar.h).
struct TrainOptions {
    bool resume = true;  // continue from the newest checkpoint in the output directory
};

TrainOutcome train(const RunConfig& config, Task& task, const TrainOptions& options = {});

// One optimizer step as train() takes it (bench_train times this too): the gradients of
// gradient_accumulation_steps micro-batches in a row from the loader, across an epoch's end if
// need be, each loss divided by their number before its backward pass, so that they add up to
// the mean of the micro-batches' (with equal batches and a mean loss, that of one batch as large
// as all of them; with one micro-batch nothing is divided); clipping at max_grad_norm; AdamW at
// `lr`; gradients zeroed. A loss or gradient norm that is not finite stops it before AdamW, with
// the reason in `bad`.
struct StepResult {
    double loss = 0;          // the mean of the micro-batches' losses
    double grad_norm = 0;     // before clipping
    bool epoch_done = false;  // one of the batches was the last of its epoch
    std::vector<int64_t> examples;  // the training examples of every micro-batch
    std::string bad;          // why the step was not taken, else empty
};
//
// Data parallel (`reducer` given, under mpirun): the loader deals global micro-batches and this
// rank trains on its share (rank_share); each share's loss is weighted by its part of the batch,
// the last micro-batch's backward hands gradients to the reducer as they become final, and the
// summed gradients, loss and norm are then the same on every rank.
StepResult optimizer_step(Task& task, BatchLoader& loader, Rng& data_rng, const std::vector<ParamGroup>& groups,
                          AdamW& optimizer, const TrainingSettings& training, double lr,
                          GradReducer* reducer = nullptr);

// Rank `rank`'s share of a global batch of `ranks`: a run of consecutive examples, the first
// (size mod ranks) ranks one more; empty when there are more ranks than examples.
std::vector<int64_t> rank_share(const std::vector<int64_t>& batch, int rank, int ranks);

// Async-signal-safe: asks the loop to stop after the current step and save a checkpoint
// (SIGINT and SIGTERM handlers call it).
void request_stop();

// The update steps of a run: max_steps when positive, else ceil(epochs × batches per epoch /
// gradient_accumulation_steps). (HF's Trainer rounds the steps of one epoch down first; here a
// step may take micro-batches from two epochs, so every batch of every epoch trains.)
int64_t total_train_steps(const TrainingSettings& training, int64_t batches_per_epoch);

// Whether `metric` improves on `best`: greater_is_better when the config sets it, else lower is
// better for names ending in "loss" and higher for the rest (HF's rule).
bool is_improvement(const TrainingSettings& training, const std::string& metric, double value, double best);

}  // namespace qdq
