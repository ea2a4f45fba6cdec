// Learning-rate schedules as Hugging Face's get_*_schedule_with_warmup driven by torch's
// LambdaLR: lr(step) = base_lr · factor(step), where `step` counts the optimizer steps
// already taken (the first update uses lr(0), which is 0 with warmup). Pure functions of the
// step: a resumed run needs only its step count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "optim/plateau.h"

namespace qdq {

enum class ScheduleName {
    Constant,            // 1
    ConstantWithWarmup,  // s/w during warmup, then 1
    Linear,              // s/w during warmup, then (T − s)/(T − w), floored at 0
    Cosine,              // s/w during warmup, then ½(1 + cos(2π·c·progress)), c = num_cycles (0.5)
    CosineWithRestarts,  // as cosine with c = num_cycles (1) restarts: ½(1 + cos(π·frac(c·progress))), 0 from T on
    CosineWithMinLr,     // as cosine, then m + (1 − m)·that, m = min_lr_rate or min_lr / base_lr
    // as cosine_with_min_lr one step ahead: warmup (s + 1)/w, or r + (1 − r)·s/(w − 1) with
    // r = warmup_lr_rate; progress (s − w + 1)/(T − w)
    CosineWarmupWithMinLr,
    // warmup_type's rise from m to 1 (m = min_lr_ratio), 1 for num_stable_steps (else what warmup and
    // num_decay_steps leave of T), decay_type's fall to m over num_decay_steps, then m
    WarmupStableDecay,
    Polynomial,          // s/w during warmup, then ((1 − e)·(1 − progress)^power + e) with e = lr_end / base_lr
                         // (lr_end 1e-7, power 1), and e from T on
    InverseSqrt,         // s/w during warmup, then 1/sqrt((s − w + τ)/τ), τ = w or 10000; needs no T
    ReduceLrOnPlateau,   // base_lr, cut by evaluations (optim/plateau.h), not a function of the step
};
inline constexpr std::pair<const char*, ScheduleName> kScheduleNames[] = {
    {"linear", ScheduleName::Linear},
    {"cosine", ScheduleName::Cosine},
    {"cosine_with_restarts", ScheduleName::CosineWithRestarts},
    {"polynomial", ScheduleName::Polynomial},
    {"constant", ScheduleName::Constant},
    {"constant_with_warmup", ScheduleName::ConstantWithWarmup},
    {"inverse_sqrt", ScheduleName::InverseSqrt},
    {"cosine_with_min_lr", ScheduleName::CosineWithMinLr},
    {"cosine_warmup_with_min_lr", ScheduleName::CosineWarmupWithMinLr},
    {"warmup_stable_decay", ScheduleName::WarmupStableDecay},
    {"reduce_lr_on_plateau", ScheduleName::ReduceLrOnPlateau}};

// How warmup_stable_decay rises and falls over a phase's progress p in [0, 1]: linear p,
// cosine ½(1 − cos πp), 1-sqrt 1 − sqrt(1 − p) rising; 1 − p, ½(1 + cos 2π·c·p), 1 − sqrt(p) falling.
enum class RampShape { Linear, Cosine, OneMinusSqrt };
inline constexpr std::pair<const char*, RampShape> kRampShapes[] = {
    {"linear", RampShape::Linear}, {"cosine", RampShape::Cosine}, {"1-sqrt", RampShape::OneMinusSqrt}};

// HF's lr_scheduler_kwargs: what get_scheduler passes on to the schedule, each unset one at the
// schedule's default. A schedule given a key it does not take is refused (check_schedule): HF
// raises for most, and silently drops them for constant, constant_with_warmup and inverse_sqrt.
struct ScheduleKwargs {
    std::optional<double> num_cycles;   // the cosines (0.5), cosine_with_restarts (1)
    std::optional<double> lr_end;       // polynomial (1e-7)
    std::optional<double> power;        // polynomial (1)
    // the two *_with_min_lr: exactly one of min_lr and min_lr_rate; reduce_lr_on_plateau (0)
    std::optional<double> min_lr;
    std::optional<double> min_lr_rate;
    std::optional<double> warmup_lr_rate;     // cosine_warmup_with_min_lr: none, or in [0, 1]
    std::optional<int64_t> num_decay_steps;   // warmup_stable_decay: required
    std::optional<int64_t> num_stable_steps;  // warmup_stable_decay: T − warmup − num_decay_steps
    std::optional<RampShape> warmup_type;     // warmup_stable_decay (linear)
    std::optional<RampShape> decay_type;      // warmup_stable_decay (cosine)
    std::optional<double> min_lr_ratio;       // warmup_stable_decay (0)
    // reduce_lr_on_plateau, torch's ReduceLROnPlateau's arguments (PlateauOptions has the defaults)
    std::optional<PlateauMode> mode;
    std::optional<double> factor;
    std::optional<int64_t> patience;
    std::optional<double> threshold;
    std::optional<PlateauThreshold> threshold_mode;
    std::optional<int64_t> cooldown;
    std::optional<double> eps;
};
// The object's keys, each a number, a step count or a shape's name; `path` and `source` name it in errors.
ScheduleKwargs schedule_kwargs_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);
nlohmann::json schedule_kwargs_to_json(const ScheduleKwargs& kwargs);  // the keys that are set

// JSON: {"name": "linear", "base_lr": 5e-5, "warmup_steps": 0 | "warmup_ratio": 0.0,
//        "total_steps": N, "kwargs": {...}}; every key optional, defaults as HF TrainingArguments.
struct ScheduleOptions {
    ScheduleName name = ScheduleName::Linear;
    double base_lr = 5e-5;
    int64_t warmup_steps = 0;
    // Used when warmup_steps is 0: ceil(total_steps · warmup_ratio) steps, as HF's
    // get_warmup_steps, so a ratio can be given before the number of steps is known.
    double warmup_ratio = 0;
    // Needed by linear and cosine, and by a warmup ratio; the trainer fills it in from the
    // data set size when the config leaves it 0.
    int64_t total_steps = 0;
    ScheduleKwargs kwargs;
};

const char* schedule_name(ScheduleName name);

// Throws naming the first value out of range: a negative rate or step count, a warmup ratio
// outside [0, 1], both warmup_steps and warmup_ratio, warmup with 'constant', a kwarg the
// schedule does not take or out of its range, a polynomial decay from a rate not above lr_end;
// once total_steps is known, a warmup_stable_decay whose warmup and decay outlast it.
void check_schedule(const ScheduleOptions& options);

// Warmup in steps, the ratio resolved against total_steps.
int64_t warmup_steps(const ScheduleOptions& options);

// The learning rate of the update that follows `step` completed updates. Throws when the
// options cannot define it (a decay schedule or a warmup ratio without total_steps, or
// reduce_lr_on_plateau, whose rate the evaluations set).
double learning_rate(const ScheduleOptions& options, int64_t step);

// Unknown keys and names, wrong types and out-of-range values are errors naming the key.
void from_json(const nlohmann::json& j, ScheduleOptions& options);
void to_json(nlohmann::json& j, const ScheduleOptions& options);

}  // namespace qdq
