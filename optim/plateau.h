// torch.optim.lr_scheduler.ReduceLROnPlateau, the schedule Hugging Face's Trainer builds for
// lr_scheduler_type "reduce_lr_on_plateau" from lr_scheduler_kwargs and steps with the metric of
// each evaluation during training (metric_for_best_model, "loss" unless set). Its rate depends on
// the evaluations so far, not on the step alone as the other schedules' do (optim/schedule.h),
// so its state travels in checkpoints.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include <nlohmann/json_fwd.hpp>

namespace qdq {

struct ScheduleKwargs;

enum class PlateauMode { Min, Max };  // whether the metric improves by falling or by rising
inline constexpr std::pair<const char*, PlateauMode> kPlateauModes[] = {{"min", PlateauMode::Min},
                                                                        {"max", PlateauMode::Max}};
// What counts as an improvement on the best metric b: beyond b·(1 ∓ threshold) or b ∓ threshold.
enum class PlateauThreshold { Rel, Abs };
inline constexpr std::pair<const char*, PlateauThreshold> kPlateauThresholds[] = {{"rel", PlateauThreshold::Rel},
                                                                                  {"abs", PlateauThreshold::Abs}};

// torch's defaults.
struct PlateauOptions {
    PlateauMode mode = PlateauMode::Min;
    double factor = 0.1;     // each cut multiplies the rate by it, in (0, 1)
    int64_t patience = 10;   // evaluations without improvement that are borne before a cut
    double threshold = 1e-4;
    PlateauThreshold threshold_mode = PlateauThreshold::Rel;
    int64_t cooldown = 0;    // evaluations after a cut that count as neither good nor bad
    double min_lr = 0;       // the rate is never cut below it
    double eps = 1e-8;       // a cut smaller than this is not made
};
// The kwargs given, the rest at torch's defaults (check_schedule has checked their ranges).
PlateauOptions plateau_options(const ScheduleKwargs& kwargs);

struct PlateauState {
    double lr = 0;               // the rate of the updates until the next cut
    std::optional<double> best;  // the best metric so far; none before the first that improves on ±inf
    int64_t bad_evaluations = 0;
    int64_t cooldown_left = 0;
};
PlateauState plateau_start(double base_lr);

// One evaluation's metric: torch's step(metrics). After more than `patience` evaluations in a
// row without improvement, the rate is cut to max(lr · factor, min_lr) and the cooldown starts.
void plateau_step(const PlateauOptions& options, PlateauState& state, double metric);

// JSON, as checkpoints hold it.
nlohmann::json plateau_state_to_json(const PlateauState& state);
PlateauState plateau_state_from_json(const nlohmann::json& j);

}  // namespace qdq
