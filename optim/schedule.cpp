#include "optim/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "json/json_fields.h"

namespace qdq {

namespace {

[[noreturn]] void fail(const std::string& message) {
    throw std::runtime_error("schedule: " + message);
}

bool has_warmup(const ScheduleOptions& o) { return o.warmup_steps != 0 || o.warmup_ratio != 0; }

constexpr double kPolynomialEnd = 1e-7;  // HF's lr_end, and power 1, as get_scheduler leaves them

// HF's polynomial lambda times base_lr, as LambdaLR multiplies it: past the last step the end rate.
double polynomial_rate(const ScheduleOptions& o, int64_t warmup, int64_t step) {
    if (step > o.total_steps) return o.base_lr * (kPolynomialEnd / o.base_lr);
    const double remaining = 1.0 - (double)(step - warmup) / (double)std::max<int64_t>(1, o.total_steps - warmup);
    const double decay = (o.base_lr - kPolynomialEnd) * remaining + kPolynomialEnd;
    return o.base_lr * (decay / o.base_lr);
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
    if (o.warmup_steps != 0 && o.warmup_ratio != 0) fail("give warmup_steps or warmup_ratio, not both");
    if (o.name == ScheduleName::Polynomial && o.base_lr < kPolynomialEnd)
        fail("'polynomial' decays to 1e-7: base_lr must be at least that, got " + std::to_string(o.base_lr));
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
    if (o.name == ScheduleName::Constant) return o.base_lr;
    int64_t warmup = warmup_steps(o);
    if (step < warmup) return o.base_lr * ((double)step / (double)std::max<int64_t>(1, warmup));
    if (o.name == ScheduleName::ConstantWithWarmup) return o.base_lr;
    if (o.total_steps <= 0) fail(std::string("'") + schedule_name(o.name) + "' needs total_steps");
    double decay_steps = (double)std::max<int64_t>(1, o.total_steps - warmup);
    if (o.name == ScheduleName::Linear)
        return o.base_lr * std::max(0.0, (double)(o.total_steps - step) / decay_steps);
    if (o.name == ScheduleName::Polynomial) return polynomial_rate(o, warmup, step);
    double progress = (double)(step - warmup) / decay_steps;
    if (o.name == ScheduleName::CosineWithRestarts) {
        if (progress >= 1.0) return o.base_lr * 0.0;
        return o.base_lr * std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * std::fmod(1.0 * progress, 1.0))));
    }
    constexpr double num_cycles = 0.5;
    return o.base_lr *
           std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles * 2.0 * progress)));
}

void from_json(const nlohmann::json& j, ScheduleOptions& o) {
    JsonFields f(j, "", "schedule");
    ScheduleOptions parsed;
    f.read_choice("name", parsed.name, kScheduleNames);
    f.read("base_lr", parsed.base_lr);
    f.read("warmup_steps", parsed.warmup_steps);
    f.read("warmup_ratio", parsed.warmup_ratio);
    f.read("total_steps", parsed.total_steps);
    f.finish();
    check_schedule(parsed);
    o = parsed;
}

void to_json(nlohmann::json& j, const ScheduleOptions& o) {
    j = {{"name", schedule_name(o.name)},
         {"base_lr", o.base_lr},
         {"warmup_steps", o.warmup_steps},
         {"warmup_ratio", o.warmup_ratio},
         {"total_steps", o.total_steps}};
}

}  // namespace qdq
