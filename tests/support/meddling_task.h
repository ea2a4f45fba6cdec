// A task that runs another and meddles at one training step: asks the loop to stop there (as
// Ctrl-C would), or poisons its loss with NaN. For the trainer's tests of interruption, resume and
// divergence, in process.
#pragma once

#include <cmath>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "trainers/run_config.h"
#include "trainers/task.h"
#include "trainers/trainer.h"

namespace qdq::testing {

class MeddlingTask : public Task {
public:
    enum class Action { stop, nan };
    MeddlingTask(std::unique_ptr<Task> inner, int64_t at_call, Action action)
        : inner_(std::move(inner)), at_call_(at_call), action_(action) {}
    nn::Module& model() override { return inner_->model(); }
    nn::BertModel& encoder() override { return inner_->encoder(); }
    const nn::BertConfig& model_config() const override { return inner_->model_config(); }
    Rng& dropout_rng() override { return inner_->dropout_rng(); }
    int64_t train_size() const override { return inner_->train_size(); }
    std::vector<int32_t> train_lengths() const override { return inner_->train_lengths(); }
    Tensor train_loss(const std::vector<int64_t>& indices, Rng& rng) override {
        Tensor loss = inner_->train_loss(indices, rng);
        if (++calls_ != at_call_) return loss;
        if (action_ == Action::stop) request_stop();
        else loss.f32()[0] = NAN;
        return loss;
    }
    Metrics evaluate(int64_t batch_size) override { return inner_->evaluate(batch_size); }
    std::vector<nn::BertInputs> eval_inputs(int64_t batch_size) override { return inner_->eval_inputs(batch_size); }
    Metrics score(const std::vector<NamedOutputs>& outputs, int64_t batch_size) override {
        return inner_->score(outputs, batch_size);
    }
    std::vector<NamedOutputs> eval_outputs(const std::vector<nn::BertInputs>& batches) override {
        return inner_->eval_outputs(batches);
    }
    bool scores_outputs() const override { return inner_->scores_outputs(); }
    std::string main_metric() const override { return inner_->main_metric(); }
    void select_eval_set(EvalSplit set) override { inner_->select_eval_set(set); }
    nlohmann::json predict(const std::string& path, int64_t batch_size) override {
        return inner_->predict(path, batch_size);
    }

private:
    std::unique_ptr<Task> inner_;
    int64_t at_call_, calls_ = 0;
    Action action_;
};

// Trains the run `raw` describes; with meddle_at > 0, meddling at that training-loss call.
inline TrainOutcome train_config(const nlohmann::json& raw, int64_t meddle_at = 0,
                                 MeddlingTask::Action action = MeddlingTask::Action::stop,
                                 const TrainOptions& options = {}) {
    RunConfig config = parse_run_config(raw, "test.json", ".");
    std::unique_ptr<Task> task = make_task(config, {});
    if (meddle_at > 0) task = std::make_unique<MeddlingTask>(std::move(task), meddle_at, action);
    return train(config, *task, options);
}

}  // namespace qdq::testing
