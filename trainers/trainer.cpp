#include "trainers/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "autograd/tape.h"
#include "data/loader.h"
#include "json/json_file.h"
#include "nn/pretrained.h"
#include "nn/state_dict.h"
#include "optim/adamw.h"
#include "optim/state.h"
#include "parallel/communicator.h"
#include "parallel/root_line.h"
#include "parallel/grad_reducer.h"
#include "qdqbert/calibration.h"
#include "qdqbert/qdq_placement.h"
#include "trainers/checkpoint.h"
#include "trainers/resume.h"
#include "trainers/run_log.h"
#include "trainers/run_precision.h"
#include "trainers/run_schedule.h"
#include "trainers/sharded_evaluation.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t stop_requested = 0;

double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void request_stop() { stop_requested = 1; }

int64_t total_train_steps(const TrainingSettings& t, int64_t batches_per_epoch) {
    if (t.max_steps > 0) return t.max_steps;
    return (int64_t)std::ceil(t.num_train_epochs * (double)batches_per_epoch / (double)t.gradient_accumulation_steps);
}

bool is_improvement(const TrainingSettings& t, const std::string& metric, double value, double best) {
    bool greater = t.greater_is_better.value_or(!metric.ends_with("loss"));
    return greater ? value > best : value < best;
}

namespace {

// One call of train(): what its steps share.
struct Run {
    const RunConfig& config;
    const TrainingSettings& t;
    Task& task;
    nn::Module& model;
    std::vector<ParamGroup> groups;
    AdamW optimizer;
    BatchLoader loader;
    std::vector<int32_t> lengths;  // of the training examples, to count the tokens seen
    Rng data_rng;                  // its own stream, apart from init and dropout
    const World& world;            // one process, or the ranks of a data-parallel run
    std::optional<GradReducer> reducer{};  // with more than one rank
    TrainerState state{};
    std::string out_dir{}, metric{};
    RunConfig resolved{};  // the config as saved in every checkpoint
    double start = 0;         // now_seconds() less the training time of earlier runs
    int64_t last_saved = 0, last_evaluated = -1;
    Metrics last_metrics{};

    int64_t loader_batch() const { return (int64_t)t.per_device_train_batch_size * world.size; }
    double epoch() const {
        return (double)(state.step * t.gradient_accumulation_steps) / (double)loader.batches_per_epoch();
    }
};

// The loader deals global batches, per_device_train_batch_size for each rank (HF/DDP's
// meaning), and each rank takes its share of each (rank_share).
LoaderOptions loader_options(const TrainingSettings& t) {
    LoaderOptions o;
    o.batch_size = (int64_t)t.per_device_train_batch_size * world().size;
    o.seed = t.data_seed ? (uint64_t)*t.data_seed : t.seed;
    o.group_by_length = t.group_by_length;
    o.drop_last = t.dataloader_drop_last;
    o.batches_per_step = t.gradient_accumulation_steps;
    return o;
}

// This rank's random streams. Rank 0 (and a single process) keeps the task's dropout stream and
// the run's data stream; every other rank draws from streams of its own, so that its dropout
// masks and data randomness are not a copy of rank 0's.
void seed_rank_streams(Run& r) {
    if (r.world.rank == 0) return;
    const uint64_t rank = (uint64_t)r.world.rank;
    r.task.dropout_rng() = Rng(mix64(r.t.seed ^ mix64(0x64726f706f7574ull + rank)));
    r.data_rng = Rng(mix64(r.t.seed ^ mix64(0x6461746172616e64ull + rank)));
}

// Continues from the newest readable checkpoint of the output directory, or (without resume)
// clears it of earlier runs (start_over).
void resume_or_start(Run& r, bool resume) {
    if (!resume) {
        if (r.world.is_root()) start_over(r.out_dir);
        return;
    }
    std::optional<ReadableCheckpoint> newest = newest_readable_checkpoint(r.out_dir, r.world.is_root());
    if (!newest) return;
    const std::string& path = newest->path;
    Checkpoint& c = newest->checkpoint;
    check_resumable(c.config, r.resolved, path);
    const size_t ranks = r.world.size > 1 ? (size_t)r.world.size : 0;
    if (c.state.ranks.size() != ranks)
        throw std::runtime_error(path + ": was written by a run of " + std::to_string(std::max<size_t>(c.state.ranks.size(), 1)) +
                                 " process(es), and this is " + std::to_string(r.world.size) +
                                 ": resume with the same number (mpirun -np N), or use a new training.output_dir");
    nn::LoadReport report = nn::load_state_dict(r.model, c.model, path);
    if (!report.missing.empty() || !report.unexpected.empty())
        throw std::runtime_error(path + ": does not fit the model: " + report.summary());
    load_state(r.optimizer.state, c.optimizer, path);
    r.state = c.state;
    const RankRngs mine = ranks ? r.state.ranks[(size_t)r.world.rank] : RankRngs{r.state.dropout_rng, r.state.data_rng};
    r.task.dropout_rng().state = mine.dropout_rng;
    r.data_rng.state = mine.data_rng;
    r.loader.seek(r.state.loader);
    r.last_saved = r.state.step;
}

// Every rank's random streams, in rank order, on every rank.
std::vector<RankRngs> gather_rank_rngs(const RankRngs& mine) {
    const std::string bytes(reinterpret_cast<const char*>(&mine), sizeof mine);
    std::vector<RankRngs> all;
    for (const std::string& b : allgather_bytes(bytes)) {
        RankRngs r;
        std::memcpy(&r, b.data(), sizeof r);
        all.push_back(r);
    }
    return all;
}

// The best checkpoint's name when the run tracks one, else empty: it loads it at the end
// (load_best_model_at_end), or a metric_for_best_model was given, under which Hugging Face's
// Trainer also keeps the best checkpoint out of save_total_limit's rotation.
std::string best_to_keep(const Run& r) {
    return r.t.load_best_model_at_end || !r.t.metric_for_best_model.empty() ? r.state.best_checkpoint : "";
}

// Called by every rank at the same steps; rank 0 writes.
void save(Run& r) {
    const RankRngs mine{r.task.dropout_rng().state, r.data_rng.state};
    if (r.world.size > 1) r.state.ranks = gather_rank_rngs(mine);
    const RankRngs& root = r.world.size > 1 ? r.state.ranks[0] : mine;
    r.state.dropout_rng = root.dropout_rng;
    r.state.data_rng = root.data_rng;
    r.state.loader = r.loader.position();
    r.state.seconds = now_seconds() - r.start;
    r.last_saved = r.state.step;
    if (!r.world.is_root()) return;
    const NamedTensors optimizer = r.t.save_only_model ? NamedTensors{} : r.optimizer.state;
    save_checkpoint(r.out_dir + "/" + checkpoint_name(r.state.step), {r.model.state_dict(), optimizer, r.state, r.resolved});
    // The newest is kept whatever the limit, the run resumes from it; and so is the best
    // (best_to_keep).
    const int64_t keep = std::max<int64_t>(1, r.t.save_total_limit.value_or(kSaveTotalLimitWhileTraining));
    prune_checkpoints(r.out_dir, (int)keep, {checkpoint_name(r.state.step), best_to_keep(r)});
}

// The task's metrics, in the precision the model is scored in (eval_matmul_precision).
Metrics scored_metrics(Run& r) {
    MatmulPrecisionGuard precision(eval_matmul_precision(r.config));
    return evaluate_on_ranks(r.task, r.t.per_device_eval_batch_size);
}

// Scores the model and logs the task's metrics, named eval_..., at the current step.
void log_evaluation(Run& r, RunLog& log) {
    r.last_metrics = scored_metrics(r);
    r.last_evaluated = r.state.step;
    nlohmann::json record = {{"step", r.state.step}, {"epoch", r.epoch()}};
    if (r.state.input_tokens_seen >= 0) record["num_input_tokens_seen"] = r.state.input_tokens_seen;
    const nlohmann::json metrics = metrics_to_json(r.last_metrics);
    for (const auto& [key, value] : metrics.items()) record[key.starts_with("eval_") ? key : "eval_" + key] = value;
    log.write(record);
}

// log_evaluation; returns true when the metrics are the best so far. Counts for early stopping
// the evaluations in a row that do not beat the best before them by more than the threshold.
bool evaluate(Run& r, RunLog& log) {
    log_evaluation(r, log);
    const std::optional<double> found = r.last_metrics.find(r.metric);
    if (!found)
        throw ConfigError(r.config.source + ": training.metric_for_best_model '" + r.metric +
                          "' is not a metric of this task: " + metrics_to_json(r.last_metrics).dump());
    const double value = *found;
    const std::optional<double> best = r.state.best_metric;
    const bool beaten = !best || (is_improvement(r.t, r.metric, value, *best) &&
                                  std::abs(value - *best) > r.t.early_stopping_threshold);
    r.state.evaluations_without_improvement = beaten ? 0 : r.state.evaluations_without_improvement + 1;
    if (best && !is_improvement(r.t, r.metric, value, *best)) return false;
    r.state.best_metric = value;
    r.state.best_checkpoint = checkpoint_name(r.state.step);
    return true;
}

// The step's counters, and when logging falls due a record of the mean loss since the last one:
// as logging_strategy and logging_first_step say, and at the last step.
void record_step(Run& r, RunLog& log, const StepResult& step, double lr, int64_t total_steps) {
    if (r.state.input_tokens_seen >= 0)
        for (int64_t i : step.examples) r.state.input_tokens_seen += r.lengths[(size_t)i];
    r.state.log_loss_sum += step.loss;
    ++r.state.log_steps;
    const int64_t every = steps_of(r.t.logging_steps, total_steps);
    const Interval logging = interval_of(r.t.logging_strategy.value_or(IntervalStrategy::steps), every, 0);
    const bool first = r.t.logging_first_step && r.state.step == 1;
    if (!interval_due(logging, r.state.step, step.epoch_done) && !first && r.state.step != total_steps) return;
    nlohmann::json record = {{"step", r.state.step}, {"epoch", r.epoch()},
                             {"loss", r.state.log_loss_sum / (double)r.state.log_steps}, {"learning_rate", lr},
                             {"grad_norm", step.grad_norm}, {"seconds", now_seconds() - r.start}};
    if (r.state.input_tokens_seen >= 0) record["num_input_tokens_seen"] = r.state.input_tokens_seen;
    // Data parallel: the time this rank (0) has waited for gradient sums, in this run of it.
    if (r.reducer) record["allreduce_wait_seconds"] = r.reducer->wait_seconds();
    log.write(record);
    r.state.log_loss_sum = 0;
    r.state.log_steps = 0;
}

// HF's EarlyStoppingCallback: enough evaluations in a row without improvement.
bool stops_early(const Run& r) {
    return r.t.early_stopping_patience && r.state.evaluations_without_improvement >= *r.t.early_stopping_patience;
}

// model.h5 (the final weights, or the best with load_best_model_at_end) and eval_results.json.
TrainOutcome finish(Run& r, RunLog& log) {
    const bool stopped_early = stops_early(r);
    if (r.last_evaluated != r.state.step) evaluate(r, log);  // a resumed run that was already complete
    if (stopped_early)
        log.note("early stopping at step " + std::to_string(r.state.step) + ": " +
                 std::to_string(r.state.evaluations_without_improvement) + " evaluations in a row without " + r.metric +
                 " beating its best by more than " + nlohmann::json(r.t.early_stopping_threshold).dump());
    if (r.t.load_best_model_at_end && !r.state.best_checkpoint.empty() &&
        r.state.best_checkpoint != checkpoint_name(r.state.step)) {
        const std::string best = r.out_dir + "/" + r.state.best_checkpoint;
        nn::load_state_dict(r.model, load_checkpoint(best).model, best);
        r.last_metrics = scored_metrics(r);
        log.note("loaded the best model (" + r.state.best_checkpoint + ", " + r.metric + " " +
                 std::to_string(*r.state.best_metric) + ")");
    }
    if (r.world.is_root()) {
        nn::save_hdf5(r.model, r.task.model_config(), r.out_dir + "/model.h5");
        write_json_file(r.out_dir + "/eval_results.json", metrics_to_json(r.last_metrics));
        // model.h5 now holds the run's result: a set limit applies to what a finished run keeps,
        // the best first when the run tracks it, as Hugging Face's Trainer ends under a limit of
        // 1; 0 keeps none.
        if (const std::optional<int64_t> limit = r.t.save_total_limit)
            prune_checkpoints(r.out_dir, (int)*limit, *limit > 0 ? std::vector{best_to_keep(r)} : std::vector<std::string>{});
    }
    barrier();  // every rank may read what rank 0 wrote once train() returns
    return {TrainStatus::finished, r.state.step, r.last_metrics, ""};
}

// Whether to stop now: asked of this process (SIGINT, SIGTERM), or of any rank, so that all
// stop at the same step.
bool stop_asked(const Run& r) {
    int64_t asked = stop_requested ? 1 : 0;
    if (r.world.size > 1) allreduce_sum(&asked, 1);
    return asked > 0;
}

// A stop that was asked for: the run saved where it stands, and the log says whether it resumes.
TrainOutcome stop_here(Run& r, RunLog& log) {
    stop_requested = 0;  // honoured: a later train() in this process starts afresh
    if (r.last_saved != r.state.step) save(r);
    log.note("stopped at step " + std::to_string(r.state.step) +
             (r.t.save_only_model ? "; the checkpoint there holds the model only (training.save_only_model): "
                                    "the run cannot resume from it"
                                  : "; the checkpoint there resumes the run"));
    return {TrainStatus::interrupted, r.state.step, r.last_metrics, "interrupted"};
}

// The folder of the run's TensorBoard event files; empty when report_to does not name tensorboard.
std::string events_dir(const TrainingSettings& t) {
    if (std::find(t.report_to.begin(), t.report_to.end(), ReportTo::tensorboard) == t.report_to.end()) return "";
    return t.logging_dir.empty() ? t.output_dir + "/runs" : t.logging_dir;
}

// Quantization-aware training: the ranges come from model.init (a calibrated checkpoint) or a
// resumed checkpoint. Recalibrated weight ranges are taken once, at step 0, so a resumed run
// keeps the ranges it started with.
void start_quantized(const RunConfig& config, nn::Module& model, int64_t step) {
    if (!config.quantization) return;
    if (step == 0 && config.quantization->recalibrate_weights) calibrate_weights(model);
    check_calibrated(model, "QAT starts from a checkpoint written by 'qdqtrain calibrate' (model.init)");
    set_quant_mode(model, QuantMode::Quantizing);
}

// Data parallel: every parameter's gradient summed across ranks, in buckets, while backward runs.
void start_gradient_reducer(Run& r) {
    std::vector<Tensor> params;
    for (const ParamGroup& g : r.groups)
        for (const NamedTensor& p : g.params) params.push_back(p.tensor);
    r.reducer.emplace(std::move(params), (int64_t)(r.t.ddp_bucket_cap_mb * 1024 * 1024));
}

// The output directory as a run (re)starts in it: without the files a run killed mid-write left,
// and with this run's config.json.
void start_output_dir(const Run& r) {
    for (const auto& entry : fs::directory_iterator(r.out_dir))
        if (entry.path().extension() == ".tmp") fs::remove(entry.path());
    write_json_file(r.out_dir + "/config.json", run_config_to_json(r.resolved));
}

// An evaluation the interval makes due, once HF's eval_delay has passed: in epochs under
// "epoch", in steps otherwise.
bool evaluation_due(const Run& r, const Interval& evaluations, bool epoch_done) {
    const double done = evaluations.strategy == IntervalStrategy::epoch ? r.epoch() : (double)r.state.step;
    return interval_due(evaluations, r.state.step, epoch_done) && done >= r.t.eval_delay;
}

}  // namespace

TrainOutcome train(const RunConfig& config, Task& task, const TrainOptions& options) {
    const TrainingSettings& t = config.training;
    MatmulPrecisionGuard precision(run_matmul_precision(t));
    if (task.train_size() == 0) throw std::runtime_error(config.source + ": the training set is empty");
    nn::Module& model = task.model();
    std::vector<ParamGroup> groups = weight_decay_groups(model.named_parameters(), t.weight_decay);
    AdamW optimizer = make_adamw(groups, {t.adam_beta1, t.adam_beta2, t.adam_epsilon});
    std::vector<int32_t> lengths = task.train_lengths();
    // Braced initializers run in order: the loader copies the lengths before Run takes them.
    Run r{config, t, task, model, std::move(groups), std::move(optimizer),
          BatchLoader(task.train_size(), loader_options(t), t.group_by_length ? lengths : std::vector<int32_t>{}),
          std::move(lengths), Rng(t.seed ^ 0x6461746172616e64ull), world()};
    r.out_dir = t.output_dir;
    r.metric = t.metric_for_best_model.empty() ? task.main_metric() : t.metric_for_best_model;
    r.resolved = saved_run_config(config, task);
    if (r.loader.batches_per_epoch() == 0)  // HF's Trainer stops at step 0 with a warning; no step could run
        throw ConfigError(config.source + ": training.dataloader_drop_last drops every batch: the " +
                          std::to_string(task.train_size()) + " training examples are fewer than one batch of " +
                          std::to_string(r.loader_batch()) + " (training.per_device_train_batch_size × ranks)");
    const int64_t total_steps = total_train_steps(t, r.loader.batches_per_epoch());
    const RunSchedule schedule = run_schedule(config, total_steps);
    fs::create_directories(t.output_dir);
    if (r.world.size > 1) start_gradient_reducer(r);

    if (options.resume)
        if (std::optional<nlohmann::json> metrics = finished_run_metrics(r.out_dir, r.resolved)) {
            root_line() << "qdqtrain: " << r.out_dir << " holds this run, finished\n";
            const std::string file = r.out_dir + "/eval_results.json";
            return {TrainStatus::finished, total_steps, metrics_from_json(*metrics, "", file), ""};
        }
    seed_rank_streams(r);
    resume_or_start(r, options.resume);
    if (r.state.step == 0) start_schedule(schedule, r.state);
    start_quantized(config, model, r.state.step);
    if (r.world.is_root()) start_output_dir(r);
    RunLog log(r.world.is_root() ? r.out_dir + "/metrics.jsonl" : "", r.state.step, total_steps, events_dir(t));
    if (r.state.step > 0)
        log.note("resuming " + r.out_dir + " at step " + std::to_string(r.state.step) + " of " + std::to_string(total_steps));
    if (r.world.size > 1)
        log.note("data parallel: " + std::to_string(r.world.size) + " ranks, " + std::to_string(r.reducer->bucket_count()) +
                 " gradient buckets, a global batch of " + std::to_string(r.loader_batch()));

    const Interval evaluations =
        interval_of(t.evaluation_strategy, steps_of(t.eval_steps, total_steps), steps_of(t.logging_steps, total_steps));
    const Interval saves = interval_of(t.save_strategy, steps_of(t.save_steps, total_steps), 0);
    r.start = now_seconds() - r.state.seconds;
    // HF's eval_on_start: the model as it starts, logged at step 0 and never the best (no
    // checkpoint holds it); a resumed run has logged it already.
    if (t.eval_on_start && r.state.step == 0) log_evaluation(r, log);
    while (r.state.step < total_steps && !stops_early(r)) {
        if (stop_asked(r)) return stop_here(r, log);
        model.train();
        const double lr = scheduled_rate(schedule, r.state);
        const StepResult step =
            optimizer_step(task, r.loader, r.data_rng, r.groups, r.optimizer, t, lr, r.reducer ? &*r.reducer : nullptr);
        if (!step.bad.empty()) {
            std::string kept = r.last_saved > 0 ? r.out_dir + "/" + checkpoint_name(r.last_saved) : "none was written";
            std::string message = "training diverged at step " + std::to_string(r.state.step + 1) + ": " + step.bad +
                                  "; nothing was saved after it (last checkpoint: " + kept + ")";
            log.note(message);
            return {TrainStatus::diverged, r.state.step, r.last_metrics, message};
        }
        ++r.state.step;
        record_step(r, log, step, lr, total_steps);
        log.progress(r.state.step, step.loss);
        const bool last = r.state.step == total_steps;
        bool best = false;
        if (evaluation_due(r, evaluations, step.epoch_done) || last) {
            best = evaluate(r, log);
            follow_evaluation(schedule, r.state, r.last_metrics);
        }
        const bool due = interval_due(saves, r.state.step, step.epoch_done) || (last && saves.strategy != IntervalStrategy::no) ||
                         (best && t.load_best_model_at_end);
        // A finished run keeps save_total_limit checkpoints beside model.h5: with 0 the last one
        // would be written only to be removed (BERT-large's, with AdamW's moments, is 4 GB).
        if (due && !(last && t.save_total_limit == 0)) save(r);
    }
    return finish(r, log);
}

}  // namespace qdq
