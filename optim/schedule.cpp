#include "optim/schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json/json_fields.h"

namespace qdq {

namespace {

[[noreturn]] void fail(const std::string& message) {
    throw std::runtime_error("schedule: " + message);
}

bool has_warmup(const ScheduleOptions& o) { return o.warmup_steps != 0 || o.warmup_ratio != 0; }

std::string number(double x) { return nlohmann::json(x).dump(); }

// get_scheduler's defaults for the keys left unset.
double num_cycles(const ScheduleOptions& o) {
    return o.kwargs.num_cycles.value_or(o.name == ScheduleName::CosineWithRestarts ? 1.0 : 0.5);
}
double lr_end(const ScheduleOptions& o) { return o.kwargs.lr_end.value_or(1e-7); }
double min_lr_rate(const ScheduleOptions& o) {
    return o.kwargs.min_lr_rate ? *o.kwargs.min_lr_rate : *o.kwargs.min_lr / o.base_lr;
}

// The kwargs by name, each kind in the order they are written.
std::array<std::pair<const char*, const std::optional<double>*>, 10> real_kwargs(const ScheduleKwargs& k) {
    return {{{"num_cycles", &k.num_cycles},
             {"lr_end", &k.lr_end},
             {"power", &k.power},
             {"min_lr", &k.min_lr},
             {"min_lr_rate", &k.min_lr_rate},
             {"warmup_lr_rate", &k.warmup_lr_rate},
             {"min_lr_ratio", &k.min_lr_ratio},
             {"factor", &k.factor},
             {"threshold", &k.threshold},
             {"eps", &k.eps}}};
}
std::array<std::pair<const char*, const std::optional<int64_t>*>, 4> step_kwargs(const ScheduleKwargs& k) {
    return {{{"num_decay_steps", &k.num_decay_steps},
             {"num_stable_steps", &k.num_stable_steps},
             {"patience", &k.patience},
             {"cooldown", &k.cooldown}}};
}
std::array<std::pair<const char*, const std::optional<RampShape>*>, 2> shape_kwargs(const ScheduleKwargs& k) {
    return {{{"warmup_type", &k.warmup_type}, {"decay_type", &k.decay_type}}};
}

template <typename Fields>
void add_given(const Fields& fields, std::vector<const char*>& given) {
    for (const auto& [key, value] : fields)
        if (*value) given.push_back(key);
}
std::vector<const char*> kwargs_given(const ScheduleKwargs& k) {
    std::vector<const char*> given;
    add_given(real_kwargs(k), given);
    add_given(step_kwargs(k), given);
    add_given(shape_kwargs(k), given);
    if (k.mode) given.push_back("mode");
    if (k.threshold_mode) given.push_back("threshold_mode");
    return given;
}

// The kwargs each schedule's get_*_schedule takes.
std::vector<const char*> kwargs_taken(ScheduleName name) {
    switch (name) {
    case ScheduleName::Cosine:
    case ScheduleName::CosineWithRestarts: return {"num_cycles"};
    case ScheduleName::CosineWithMinLr: return {"num_cycles", "min_lr", "min_lr_rate"};
    case ScheduleName::CosineWarmupWithMinLr: return {"num_cycles", "min_lr", "min_lr_rate", "warmup_lr_rate"};
    case ScheduleName::WarmupStableDecay:
        return {"num_decay_steps", "num_stable_steps", "warmup_type", "decay_type", "min_lr_ratio", "num_cycles"};
    case ScheduleName::Polynomial: return {"lr_end", "power"};
    case ScheduleName::ReduceLrOnPlateau:
        return {"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps"};
    default: return {};
    }
}

bool ends_at_min_lr(ScheduleName name) {
    return name == ScheduleName::CosineWithMinLr || name == ScheduleName::CosineWarmupWithMinLr;
}

void check_in_unit_interval(const std::optional<double>& value, const char* key) {
    if (value && !(*value >= 0 && *value <= 1)) fail(std::string(key) + " must lie in [0, 1], got " + number(*value));
}

// HF derives the stable phase from num_training_steps unless num_stable_steps is given.
int64_t stable_steps(const ScheduleOptions& o, int64_t warmup) {
    if (o.kwargs.num_stable_steps) return *o.kwargs.num_stable_steps;
    if (o.total_steps <= 0) fail("'warmup_stable_decay' needs total_steps or the kwarg num_stable_steps");
    return o.total_steps - warmup - *o.kwargs.num_decay_steps;
}

void check_warmup_stable_decay(const ScheduleOptions& o) {
    const ScheduleKwargs& k = o.kwargs;
    if (!k.num_decay_steps) fail("'warmup_stable_decay' needs the kwarg num_decay_steps");
    if (k.num_stable_steps || o.total_steps <= 0) return;
    const int64_t warmup = warmup_steps(o);
    if (stable_steps(o, warmup) < 0)
        fail("'warmup_stable_decay' warms up for " + std::to_string(warmup) + " steps and decays for " +
             std::to_string(*k.num_decay_steps) + ", more than the " + std::to_string(o.total_steps) +
             " steps of the run");
}

// torch refuses a factor of 1 or more; the rest it would take and misbehave with.
void check_plateau(const ScheduleKwargs& k) {
    if (k.factor && !(*k.factor > 0 && *k.factor < 1)) fail("factor must lie in (0, 1), got " + number(*k.factor));
    for (const auto& [key, value] : {std::pair{"threshold", &k.threshold}, {"min_lr", &k.min_lr}, {"eps", &k.eps}})
        if (*value && !(**value >= 0)) fail(std::string(key) + " must be >= 0, got " + number(**value));
}

void check_kwargs(const ScheduleOptions& o) {
    const ScheduleKwargs& k = o.kwargs;
    const std::vector<const char*> taken = kwargs_taken(o.name);
    for (const char* key : kwargs_given(k))
        if (std::none_of(taken.begin(), taken.end(), [&](const char* t) { return std::string_view(key) == t; }))
            fail(std::string("'") + schedule_name(o.name) + "' takes no kwarg '" + key + "'");
    for (const auto& [key, value] : real_kwargs(k))
        if (*value && !std::isfinite(**value))
            fail(std::string("kwarg '") + key + "' must be finite, got " + number(**value));
    for (const auto& [key, value] : step_kwargs(k))
        if (*value && **value < 0) fail(std::string(key) + " must be >= 0, got " + std::to_string(**value));
    if (k.num_cycles && !(*k.num_cycles > 0)) fail("num_cycles must be positive, got " + number(*k.num_cycles));
    if (k.power && !(*k.power > 0)) fail("power must be positive, got " + number(*k.power));
    if (k.lr_end && !(*k.lr_end >= 0)) fail("lr_end must be >= 0, got " + number(*k.lr_end));
    if (o.name == ScheduleName::Polynomial && !(o.base_lr > lr_end(o)))
        fail("'polynomial' decays to lr_end " + number(lr_end(o)) + ": base_lr must be above it, got " +
             number(o.base_lr));
    check_in_unit_interval(k.min_lr_rate, "min_lr_rate");
    check_in_unit_interval(k.warmup_lr_rate, "warmup_lr_rate");
    check_in_unit_interval(k.min_lr_ratio, "min_lr_ratio");
    if (o.name == ScheduleName::WarmupStableDecay) check_warmup_stable_decay(o);
    if (o.name == ScheduleName::ReduceLrOnPlateau) check_plateau(k);
    if (!ends_at_min_lr(o.name)) return;
    if (k.min_lr.has_value() == k.min_lr_rate.has_value())
        fail(std::string("'") + schedule_name(o.name) + "' takes exactly one of the kwargs min_lr and min_lr_rate");
    if (k.min_lr && !(*k.min_lr >= 0 && *k.min_lr <= o.base_lr))
        fail("min_lr must lie in [0, base_lr], got " + number(*k.min_lr));
}

void require_total_steps(const ScheduleOptions& o) {
    if (o.total_steps <= 0) fail(std::string("'") + schedule_name(o.name) + "' needs total_steps");
}

// HF's polynomial lambda times base_lr, as LambdaLR multiplies it: past the last step the end rate.
double polynomial_rate(const ScheduleOptions& o, int64_t warmup, int64_t step) {
    const double end = lr_end(o);
    if (step > o.total_steps) return o.base_lr * (end / o.base_lr);
    const double remaining = 1.0 - (double)(step - warmup) / (double)std::max<int64_t>(1, o.total_steps - warmup);
    const double decay = (o.base_lr - end) * std::pow(remaining, o.kwargs.power.value_or(1.0)) + end;
    return o.base_lr * (decay / o.base_lr);
}

// HF's inverse_sqrt with the timescale get_scheduler gives it: the warmup, or 10000 without one.
double inverse_sqrt_rate(const ScheduleOptions& o, int64_t warmup, int64_t step) {
    const int64_t timescale = warmup != 0 ? warmup : 10000;
    const int64_t shift = timescale - warmup;
    return o.base_lr * (1.0 / std::sqrt((double)(step + shift) / (double)timescale));
}

// HF's cosine_warmup_with_min_lr lambda times base_lr: its warmup and its progress count the
// update being taken, so the first one is not at rate 0 and the last one reaches min_lr.
double cosine_warmup_with_min_lr_rate(const ScheduleOptions& o, int64_t warmup, int64_t step) {
    require_total_steps(o);
    const double s = (double)step, w = (double)warmup;
    if (s < w) {
        if (!o.kwargs.warmup_lr_rate) return o.base_lr * ((s + 1.0) / std::max(1.0, w));
        const double r = *o.kwargs.warmup_lr_rate;
        return o.base_lr * (r + (1.0 - r) * s / std::max(1.0, w - 1.0));
    }
    const double progress = (s - w + 1.0) / std::max(1.0, (double)o.total_steps - w);
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles(o) * 2.0 * progress));
    return o.base_lr * std::max(0.0, cosine * (1 - min_lr_rate(o)) + min_lr_rate(o));
}

double rise(RampShape shape, double progress) {
    switch (shape) {
    case RampShape::Linear: return progress;
    case RampShape::Cosine: return 0.5 * (1.0 - std::cos(std::numbers::pi * progress));
    case RampShape::OneMinusSqrt: return 1.0 - std::sqrt(1.0 - progress);
    }
    return progress;
}
double fall(RampShape shape, double progress, double cycles) {
    switch (shape) {
    case RampShape::Linear: return 1.0 - progress;
    case RampShape::Cosine: return 0.5 * (1.0 + std::cos(std::numbers::pi * cycles * 2.0 * progress));
    case RampShape::OneMinusSqrt: return 1.0 - std::sqrt(progress);
    }
    return 1.0 - progress;
}

// HF's WSD lambda times base_lr: the warmup and the decay each run between min_lr_ratio and 1.
double warmup_stable_decay_rate(const ScheduleOptions& o, int64_t warmup, int64_t step) {
    const ScheduleKwargs& k = o.kwargs;
    const double floor = k.min_lr_ratio.value_or(0.0);
    const int64_t stable = stable_steps(o, warmup), decay = *k.num_decay_steps;
    auto lifted = [&](double factor) { return o.base_lr * std::max(0.0, factor * (1.0 - floor) + floor); };
    if (step < warmup)
        return lifted(rise(k.warmup_type.value_or(RampShape::Linear),
                           (double)step / (double)std::max<int64_t>(1, warmup)));
    if (step < warmup + stable) return o.base_lr * 1.0;
    if (step < warmup + stable + decay)
        return lifted(fall(k.decay_type.value_or(RampShape::Cosine),
                           (double)(step - warmup - stable) / (double)std::max<int64_t>(1, decay), num_cycles(o)));
    return o.base_lr * floor;
}

}  // namespace

void check_schedule(const ScheduleOptions& o) {
    if (!(o.base_lr >= 0)) fail("base_lr must be >= 0, got " + std::to_string(o.base_lr));
    if (o.warmup_steps < 0)
        fail("warmup_steps must be >= 0, got " + std::to_string(o.warmup_steps));
    if (!(o.warmup_ratio >= 0 && o.warmup_ratio <= 1))
        fail("warmup_ratio must lie in [0, 1], got " + std::to_string(o.warmup_ratio));
    if (o.total_steps < 0) fail("total_steps must be >= 0, got " + std::to_string(o.total_steps));
    // HF's get_constant_schedule ignores warmup arguments; here asking for both is a mistake.
    if (o.name == ScheduleName::Constant && has_warmup(o))
        fail("'constant' takes no warmup (use 'constant_with_warmup')");
    // HF's get_scheduler gives it none, and would ignore the setting.
    if (o.name == ScheduleName::ReduceLrOnPlateau && has_warmup(o)) fail("'reduce_lr_on_plateau' takes no warmup");
    if (o.warmup_steps != 0 && o.warmup_ratio != 0) fail("give warmup_steps or warmup_ratio, not both");
    check_kwargs(o);
}

const char* schedule_name(ScheduleName name) { return name_of_choice(name, kScheduleNames); }

int64_t warmup_steps(const ScheduleOptions& o) {
    if (o.warmup_steps > 0 || o.warmup_ratio == 0) return o.warmup_steps;
    if (o.total_steps <= 0) fail("warmup_ratio needs total_steps");
    return (int64_t)std::ceil((double)o.total_steps * o.warmup_ratio);
}

// The formulas, max(1, ·) guards and double arithmetic are transformers.optimization's, term
// for term, so the values agree with HF's to the last bit (cos aside, whose last bit is libm's).
double learning_rate(const ScheduleOptions& o, int64_t step) {
    check_schedule(o);
    if (step < 0) fail("step must be >= 0, got " + std::to_string(step));
    if (o.name == ScheduleName::ReduceLrOnPlateau)
        fail("'reduce_lr_on_plateau' takes its rate from the evaluations (plateau_step), not from the step");
    if (o.name == ScheduleName::Constant) return o.base_lr;
    int64_t warmup = warmup_steps(o);
    if (o.name == ScheduleName::WarmupStableDecay) return warmup_stable_decay_rate(o, warmup, step);
    if (o.name == ScheduleName::CosineWarmupWithMinLr) return cosine_warmup_with_min_lr_rate(o, warmup, step);
    if (step < warmup) return o.base_lr * ((double)step / (double)std::max<int64_t>(1, warmup));
    if (o.name == ScheduleName::ConstantWithWarmup) return o.base_lr;
    if (o.name == ScheduleName::InverseSqrt) return inverse_sqrt_rate(o, warmup, step);
    require_total_steps(o);
    double decay_steps = (double)std::max<int64_t>(1, o.total_steps - warmup);
    if (o.name == ScheduleName::Linear)
        return o.base_lr * std::max(0.0, (double)(o.total_steps - step) / decay_steps);
    if (o.name == ScheduleName::Polynomial) return polynomial_rate(o, warmup, step);
    double progress = (double)(step - warmup) / decay_steps;
    if (o.name == ScheduleName::CosineWithRestarts) {
        if (progress >= 1.0) return o.base_lr * 0.0;
        const double restart = std::fmod(num_cycles(o) * progress, 1.0);
        return o.base_lr * std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * restart)));
    }
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles(o) * 2.0 * progress));
    if (o.name == ScheduleName::CosineWithMinLr)
        return o.base_lr * std::max(0.0, cosine * (1 - min_lr_rate(o)) + min_lr_rate(o));
    return o.base_lr * std::max(0.0, cosine);
}

namespace {

template <typename E, typename Choices>
void read_named(JsonFields& f, const char* key, std::optional<E>& out, const Choices& choices) {
    if (!f.has(key)) return;
    E value{};
    f.read_choice(key, value, choices);
    out = value;
}

}  // namespace

ScheduleKwargs schedule_kwargs_from_json(const nlohmann::json& j, const std::string& path, const std::string& source) {
    if (!j.is_object()) throw std::runtime_error(source + ": '" + path + "' must be an object, got " + j.dump());
    JsonFields f(j, path, source);
    ScheduleKwargs k;
    f.read("num_cycles", k.num_cycles);
    f.read("lr_end", k.lr_end);
    f.read("power", k.power);
    f.read("min_lr", k.min_lr);
    f.read("min_lr_rate", k.min_lr_rate);
    f.read("warmup_lr_rate", k.warmup_lr_rate);
    f.read("num_decay_steps", k.num_decay_steps);
    f.read("num_stable_steps", k.num_stable_steps);
    read_named(f, "warmup_type", k.warmup_type, kRampShapes);
    read_named(f, "decay_type", k.decay_type, kRampShapes);
    f.read("min_lr_ratio", k.min_lr_ratio);
    read_named(f, "mode", k.mode, kPlateauModes);
    f.read("factor", k.factor);
    f.read("patience", k.patience);
    f.read("threshold", k.threshold);
    read_named(f, "threshold_mode", k.threshold_mode, kPlateauThresholds);
    f.read("cooldown", k.cooldown);
    f.read("eps", k.eps);
    f.finish();
    return k;
}

nlohmann::json schedule_kwargs_to_json(const ScheduleKwargs& k) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [key, value] : real_kwargs(k))
        if (*value) j[key] = **value;
    for (const auto& [key, value] : step_kwargs(k))
        if (*value) j[key] = **value;
    for (const auto& [key, value] : shape_kwargs(k))
        if (*value) j[key] = name_of_choice(**value, kRampShapes);
    if (k.mode) j["mode"] = name_of_choice(*k.mode, kPlateauModes);
    if (k.threshold_mode) j["threshold_mode"] = name_of_choice(*k.threshold_mode, kPlateauThresholds);
    return j;
}

void from_json(const nlohmann::json& j, ScheduleOptions& o) {
    JsonFields f(j, "", "schedule");
    ScheduleOptions parsed;
    f.read_choice("name", parsed.name, kScheduleNames);
    f.read("base_lr", parsed.base_lr);
    f.read("warmup_steps", parsed.warmup_steps);
    f.read("warmup_ratio", parsed.warmup_ratio);
    f.read("total_steps", parsed.total_steps);
    if (f.has("kwargs")) parsed.kwargs = schedule_kwargs_from_json(f.section("kwargs"), "kwargs", "schedule");
    f.finish();
    check_schedule(parsed);
    o = parsed;
}

void to_json(nlohmann::json& j, const ScheduleOptions& o) {
    j = {{"name", schedule_name(o.name)},
         {"base_lr", o.base_lr},
         {"warmup_steps", o.warmup_steps},
         {"warmup_ratio", o.warmup_ratio},
         {"total_steps", o.total_steps},
         {"kwargs", schedule_kwargs_to_json(o.kwargs)}};
}

}  // namespace qdq
