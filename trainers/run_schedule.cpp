#include "trainers/run_schedule.h"

#include <stdexcept>
#include <vector>

namespace qdq {

RunSchedule run_schedule(const RunConfig& config, int64_t total_steps) {
    const TrainingSettings& t = config.training;
    RunSchedule schedule{schedule_options(t, total_steps), std::nullopt, ""};
    try {
        check_schedule(schedule.options);
    } catch (const std::runtime_error& e) {
        throw ConfigError(config.source + ": training.lr_scheduler_kwargs: " + e.what());
    }
    if (t.lr_scheduler_type != ScheduleName::ReduceLrOnPlateau) return schedule;
    schedule.plateau = plateau_options(t.lr_scheduler_kwargs);
    std::vector<std::string> sets;
    for (const EvalSet& set : config.data.eval_sets) sets.push_back(set.name);
    const std::string wanted = t.metric_for_best_model.empty() ? "loss" : t.metric_for_best_model;
    const std::optional<std::string> score = score_named(config.data.task, sets, wanted);
    if (!score)
        throw ConfigError(config.source + ": training.lr_scheduler_type \"reduce_lr_on_plateau\" follows "
                          "training.metric_for_best_model, \"loss\" unless set, and data.task " +
                          name_of_choice(config.data.task, kTaskKindNames) + " reports no '" + wanted + "'");
    schedule.plateau_metric = *score;
    return schedule;
}

void start_schedule(const RunSchedule& schedule, TrainerState& state) {
    if (schedule.plateau) state.plateau = plateau_start(schedule.options.base_lr);
}

double scheduled_rate(const RunSchedule& schedule, const TrainerState& state) {
    if (!schedule.plateau) return learning_rate(schedule.options, state.step);
    if (!state.plateau) throw std::runtime_error("reduce_lr_on_plateau: the run's state holds no plateau state");
    return state.plateau->lr;
}

void follow_evaluation(const RunSchedule& schedule, TrainerState& state, const Metrics& metrics) {
    if (!schedule.plateau) return;
    plateau_step(*schedule.plateau, *state.plateau, metrics.value(schedule.plateau_metric, "reduce_lr_on_plateau"));
}

}  // namespace qdq
