#include "trainers/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "data/loader.h"
#include "json/json_file.h"
#include "nn/pretrained.h"
#include "nn/state_dict.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "optim/schedule.h"
#include "optim/state.h"
#include "qdqbert/calibration.h"
#include "qdqbert/qdq_placement.h"
#include "trainers/checkpoint.h"
#include "trainers/run_log.h"
#include "trainers/run_precision.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t stop_requested = 0;

// Keys that may change between a run and its resumption: where and how often it reports, and
// where the data files sit (compared by file name, so a run moves between machines).
const char* kFreeTrainingKeys[] = {"output_dir", "logging_steps", "eval_steps", "save_steps",
                                   "save_total_limit", "per_device_eval_batch_size", "load_best_model_at_end",
                                   "metric_for_best_model", "greater_is_better"};

nlohmann::json comparable(nlohmann::json config) {
    for (const char* key : kFreeTrainingKeys) config["training"].erase(key);
    // Keys older runs lack, as those runs had them.
    if (!config["training"].contains("bf16")) config["training"]["bf16"] = false;
    if (!config["training"].contains("gradient_accumulation_steps")) config["training"]["gradient_accumulation_steps"] = 1;
    nlohmann::json& data = config["data"];
    data.erase("data_dir");
    data.erase("eval_files");
    data.erase("max_eval_examples");
    for (auto& f : data["train_files"]) f = fs::path(f.get<std::string>()).filename().string();
    data["vocab"] = fs::path(data["vocab"].get<std::string>()).filename().string();
    config["model"].erase("init");  // the checkpoint's weights replace it
    config.erase("pipeline");       // what happens after this run
    // Older runs saved the quantization section as the config gave it: compared as read.
    if (config.contains("quantization"))
        config["quantization"] = quantization_config_to_json(quantization_config_from_json(config["quantization"], "checkpoint"));
    return config;
}

void check_resumable(const nlohmann::json& saved, const nlohmann::json& current, const std::string& checkpoint) {
    nlohmann::json diff = nlohmann::json::diff(comparable(saved), comparable(current));
    if (diff.empty()) return;
    std::string where = diff[0].value("path", "?");
    throw std::runtime_error(checkpoint + ": was written by a run with a different config (" + where +
                             "); resuming would not give the run either config describes. Use a new "
                             "training.output_dir, or --no-resume to start over in this one");
}

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

StepResult optimizer_step(Task& task, BatchLoader& loader, Rng& data_rng, const std::vector<ParamGroup>& groups,
                          AdamW& optimizer, const TrainingSettings& t, double lr) {
    StepResult out;
    const int64_t micro_batches = t.gradient_accumulation_steps;
    std::vector<int64_t> batch;
    for (int64_t i = 0; i < micro_batches; ++i) {
        while (!loader.next(batch)) {}  // an epoch's end: the loader moves to the next one
        out.epoch_done = out.epoch_done || loader.position().index >= loader.size();
        out.examples.insert(out.examples.end(), batch.begin(), batch.end());
        Tensor loss = task.train_loss(batch, data_rng);
        if (micro_batches > 1) loss = mul_scalar(loss, 1.0f / (float)micro_batches);
        const double value = loss.item();
        if (!std::isfinite(value)) {
            clear_tape();
            out.bad = "the loss is " + std::to_string(value * (double)micro_batches);
            return out;
        }
        out.loss += value;
        backward(loss);
    }
    out.grad_norm = clip_grad_norm(groups, t.max_grad_norm > 0 ? t.max_grad_norm : INFINITY);
    if (!std::isfinite(out.grad_norm)) {
        out.bad = "the gradient norm is " + std::to_string(out.grad_norm);
        return out;
    }
    adamw_step(optimizer, lr);
    for (const ParamGroup& g : groups)
        for (NamedTensor p : g.params) p.tensor.zero_grad();
    return out;
}

TrainOutcome train(const RunConfig& config, Task& task, const TrainOptions& options) {
    const TrainingSettings& t = config.training;
    MatmulPrecisionGuard precision(run_matmul_precision(t));
    const std::string out_dir = t.output_dir;
    fs::create_directories(out_dir);
    const nlohmann::json resolved = saved_run_config(config, task);
    nn::Module& model = task.model();

    std::vector<ParamGroup> groups = weight_decay_groups(model.named_parameters(), t.weight_decay);
    AdamW optimizer = make_adamw(groups, {t.adam_beta1, t.adam_beta2, t.adam_epsilon});
    LoaderOptions loader_options;
    loader_options.batch_size = t.per_device_train_batch_size;
    loader_options.seed = t.seed;
    loader_options.group_by_length = t.group_by_length;
    if (task.train_size() == 0) throw std::runtime_error(config.source + ": the training set is empty");
    const std::vector<int32_t> lengths = task.train_lengths();
    BatchLoader loader(task.train_size(), loader_options, t.group_by_length ? lengths : std::vector<int32_t>{});
    const int64_t total_steps = total_train_steps(t, loader.batches_per_epoch());
    const ScheduleOptions schedule = schedule_options(t, total_steps);
    const std::string metric = t.metric_for_best_model.empty() ? task.main_metric() : t.metric_for_best_model;

    TrainerState state;
    Rng data_rng(t.seed ^ 0x6461746172616e64ull);  // its own stream, apart from init and dropout
    std::vector<std::string> existing = list_checkpoints(out_dir);
    if (options.resume && !existing.empty()) {
        Checkpoint c = load_checkpoint(existing.back());
        check_resumable(c.config, resolved, existing.back());
        nn::LoadReport report = nn::load_state_dict(model, c.model, existing.back());
        if (!report.missing.empty() || !report.unexpected.empty())
            throw std::runtime_error(existing.back() + ": does not fit the model: " + report.summary());
        load_state(optimizer.state, c.optimizer, existing.back());
        state = c.state;
        task.dropout_rng().state = state.dropout_rng;
        data_rng.state = state.data_rng;
        loader.seek(state.loader);
    } else if (!options.resume) {
        for (const std::string& path : existing) fs::remove(path);
    }
    if (config.quantization) {
        // Quantization-aware training: the ranges come from model.init (a calibrated checkpoint)
        // or a resumed checkpoint. Recalibrated weight ranges are taken once, at step 0, so a
        // resumed run keeps the ranges it started with.
        if (state.step == 0 && config.quantization->recalibrate_weights) calibrate_weights(model);
        check_calibrated(model, "QAT starts from a checkpoint written by 'qdqtrain calibrate' (model.init)");
        set_quant_mode(model, QuantMode::Quantizing);
    }
    for (const auto& entry : fs::directory_iterator(out_dir))  // left by a run killed mid-write
        if (entry.path().extension() == ".tmp") fs::remove(entry.path());
    write_json_file(out_dir + "/config.json", resolved);
    RunLog log(out_dir + "/metrics.jsonl", state.step, total_steps, options.progress_bar);
    if (state.step > 0)
        log.note("resuming " + out_dir + " at step " + std::to_string(state.step) + " of " + std::to_string(total_steps));

    double start = now_seconds() - state.seconds;
    const double run_start = now_seconds();
    const int64_t first_step = state.step;
    int64_t last_saved = state.step, last_evaluated = -1;
    nlohmann::json last_metrics;

    auto epoch_now = [&] {
        return (double)(state.step * t.gradient_accumulation_steps) / (double)loader.batches_per_epoch();
    };
    auto save = [&] {
        state.dropout_rng = task.dropout_rng().state;
        state.data_rng = data_rng.state;
        state.loader = loader.position();
        state.seconds = now_seconds() - start;
        Checkpoint c{model.state_dict(), optimizer.state, state, resolved};
        save_checkpoint(out_dir + "/" + checkpoint_name(state.step), c);
        prune_checkpoints(out_dir, t.save_total_limit, t.load_best_model_at_end ? state.best_checkpoint : "");
        last_saved = state.step;
    };
    // Returns true when this evaluation is the best so far.
    auto evaluate = [&] {
        last_metrics = task.evaluate(t.per_device_eval_batch_size);
        last_evaluated = state.step;
        nlohmann::json record = {{"step", state.step}, {"epoch", epoch_now()}};
        if (state.input_tokens_seen >= 0) record["num_input_tokens_seen"] = state.input_tokens_seen;
        for (const auto& [key, value] : last_metrics.items())
            record[key.rfind("eval_", 0) == 0 ? key : "eval_" + key] = value;
        log.write(record);
        if (!last_metrics.contains(metric))
            throw std::runtime_error(config.source + ": training.metric_for_best_model '" + metric +
                                     "' is not a metric of this task: " + last_metrics.dump());
        double value = last_metrics[metric].get<double>();
        if (state.best_metric && !is_improvement(t, metric, value, *state.best_metric)) return false;
        state.best_metric = value;
        state.best_checkpoint = checkpoint_name(state.step);
        return true;
    };

    while (state.step < total_steps) {
        if (stop_requested) {
            stop_requested = 0;  // honoured: a later train() in this process starts afresh
            if (last_saved != state.step) save();
            log.note("stopped at step " + std::to_string(state.step) + "; the checkpoint there resumes the run");
            return {TrainStatus::interrupted, state.step, last_metrics, "interrupted"};
        }
        model.train();
        const double lr = learning_rate(schedule, state.step);
        const StepResult step = optimizer_step(task, loader, data_rng, groups, optimizer, t, lr);
        if (!step.bad.empty()) {
            std::string kept = last_saved > 0 ? out_dir + "/" + checkpoint_name(last_saved) : "none was written";
            std::string message = "training diverged at step " + std::to_string(state.step + 1) + ": " + step.bad +
                                  "; nothing was saved after it (last checkpoint: " + kept + ")";
            log.note(message);
            return {TrainStatus::diverged, state.step, last_metrics, message};
        }
        ++state.step;
        if (state.input_tokens_seen >= 0)
            for (int64_t i : step.examples) state.input_tokens_seen += lengths[(size_t)i];
        state.log_loss_sum += step.loss;
        ++state.log_steps;

        const double rate = (double)(state.step - first_step) / std::max(1e-9, now_seconds() - run_start);
        log.progress(state.step, step.loss, rate);
        if (state.step % t.logging_steps == 0 || state.step == total_steps) {
            nlohmann::json record = {{"step", state.step}, {"epoch", epoch_now()},
                                     {"loss", state.log_loss_sum / (double)state.log_steps}, {"learning_rate", lr},
                                     {"grad_norm", step.grad_norm}, {"seconds", now_seconds() - start}};
            if (state.input_tokens_seen >= 0) record["num_input_tokens_seen"] = state.input_tokens_seen;
            log.write(record);
            state.log_loss_sum = 0;
            state.log_steps = 0;
        }
        const bool last = state.step == total_steps;
        bool best = false;
        if ((t.eval_steps > 0 ? state.step % t.eval_steps == 0 : step.epoch_done) || last) best = evaluate();
        if ((t.save_steps > 0 ? state.step % t.save_steps == 0 : step.epoch_done) || last || (best && t.load_best_model_at_end))
            save();
    }
    if (last_evaluated != state.step) evaluate();  // a resumed run that was already complete

    std::string final_weights = out_dir + "/" + checkpoint_name(state.step);
    if (t.load_best_model_at_end && !state.best_checkpoint.empty() &&
        state.best_checkpoint != checkpoint_name(state.step)) {
        final_weights = out_dir + "/" + state.best_checkpoint;
        nn::load_state_dict(model, load_checkpoint(final_weights).model, final_weights);
        last_metrics = task.evaluate(t.per_device_eval_batch_size);
        log.note("loaded the best model (" + state.best_checkpoint + ", " + metric + " " +
                 std::to_string(*state.best_metric) + ")");
    }
    nn::save_hdf5(model, task.model_config(), out_dir + "/model.h5");
    write_json_file(out_dir + "/eval_results.json", last_metrics);
    return {TrainStatus::finished, state.step, last_metrics, ""};
}

}  // namespace qdq
