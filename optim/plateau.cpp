#include "optim/plateau.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "optim/schedule.h"

namespace qdq {

namespace {

// torch's is_better, the same products and sums; before any best, against torch's starting
// value, the mode's worst.
bool improves(const PlateauOptions& o, double metric, std::optional<double> best_so_far) {
    const double inf = std::numeric_limits<double>::infinity();
    const double best = best_so_far.value_or(o.mode == PlateauMode::Min ? inf : -inf);
    const bool relative = o.threshold_mode == PlateauThreshold::Rel;
    if (o.mode == PlateauMode::Min) return relative ? metric < best * (1.0 - o.threshold) : metric < best - o.threshold;
    return relative ? metric > best * (o.threshold + 1.0) : metric > best + o.threshold;
}

}  // namespace

PlateauOptions plateau_options(const ScheduleKwargs& k) {
    PlateauOptions o;
    o.mode = k.mode.value_or(o.mode);
    o.factor = k.factor.value_or(o.factor);
    o.patience = k.patience.value_or(o.patience);
    o.threshold = k.threshold.value_or(o.threshold);
    o.threshold_mode = k.threshold_mode.value_or(o.threshold_mode);
    o.cooldown = k.cooldown.value_or(o.cooldown);
    o.min_lr = k.min_lr.value_or(o.min_lr);
    o.eps = k.eps.value_or(o.eps);
    return o;
}

PlateauState plateau_start(double base_lr) { return {base_lr, std::nullopt, 0, 0}; }

void plateau_step(const PlateauOptions& o, PlateauState& s, double metric) {
    if (improves(o, metric, s.best)) {
        s.best = metric;
        s.bad_evaluations = 0;
    } else {
        ++s.bad_evaluations;
    }
    if (s.cooldown_left > 0) {
        --s.cooldown_left;
        s.bad_evaluations = 0;
    }
    if (s.bad_evaluations <= o.patience) return;
    const double cut = std::max(s.lr * o.factor, o.min_lr);
    if (s.lr - cut > o.eps) s.lr = cut;
    s.cooldown_left = o.cooldown;
    s.bad_evaluations = 0;
}

nlohmann::json plateau_state_to_json(const PlateauState& s) {
    return {{"lr", s.lr},
            {"best", s.best ? nlohmann::json(*s.best) : nlohmann::json()},
            {"bad_evaluations", s.bad_evaluations},
            {"cooldown_left", s.cooldown_left}};
}

PlateauState plateau_state_from_json(const nlohmann::json& j) {
    const nlohmann::json& best = j.at("best");
    return {j.at("lr").get<double>(), best.is_null() ? std::nullopt : std::optional(best.get<double>()),
            j.at("bad_evaluations").get<int64_t>(), j.at("cooldown_left").get<int64_t>()};
}

}  // namespace qdq
