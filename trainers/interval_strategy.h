// When a run evaluates and saves, as Hugging Face's TrainingArguments say it: evaluation_strategy
// (or its later name eval_strategy) and save_strategy, "no", "steps" or "epoch". Unset, they
// follow from eval_steps and save_steps as before they existed here: "steps" when the count is
// positive, else "epoch". Under "steps" a run evaluates every eval_steps, or every logging_steps
// when eval_steps is 0, as HF does. Each count may be a share of the run's steps (StepCount).
//
// Beyond HF: under evaluation "no" the run still evaluates once at its end (eval_results.json,
// as run_glue.py's do_eval would), and under save "no" a run stopped by Ctrl-C still saves the
// checkpoint it resumes from.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

namespace qdq {

enum class IntervalStrategy { no, steps, epoch };
inline constexpr std::pair<const char*, IntervalStrategy> kIntervalStrategyNames[] = {
    {"no", IntervalStrategy::no}, {"steps", IntervalStrategy::steps}, {"epoch", IntervalStrategy::epoch}};

// HF's logging_steps, eval_steps and save_steps: a whole number of steps or, given as a number
// in (0, 1), that share of the run's optimizer steps, rounded up (TrainingArguments' ratio:
// ceil(max_steps · ratio)).
struct StepCount {
    int64_t steps = 0;
    double ratio = 0;  // > 0: a share of the run's steps, and `steps` unused
};

inline int64_t steps_of(const StepCount& count, int64_t total_steps) {
    return count.ratio > 0 ? (int64_t)std::ceil((double)total_steps * count.ratio) : count.steps;
}

inline bool operator==(const StepCount& a, const StepCount& b) { return a.steps == b.steps && a.ratio == b.ratio; }

struct Interval {
    IntervalStrategy strategy = IntervalStrategy::epoch;
    int64_t every = 0;  // steps apart, under "steps"
};

// The interval a strategy (if given) and its step count describe; `fallback` is the count
// "steps" takes when `steps` is 0 (logging_steps, for evaluation).
inline Interval interval_of(const std::optional<IntervalStrategy>& strategy, int64_t steps, int64_t fallback) {
    const IntervalStrategy s = strategy.value_or(steps > 0 ? IntervalStrategy::steps : IntervalStrategy::epoch);
    return {s, steps > 0 ? steps : fallback};
}

// Whether the interval falls due after optimizer step `step`, which may have ended an epoch.
inline bool interval_due(const Interval& interval, int64_t step, bool epoch_done) {
    switch (interval.strategy) {
        case IntervalStrategy::no: return false;
        case IntervalStrategy::steps: return interval.every > 0 && step % interval.every == 0;
        case IntervalStrategy::epoch: return epoch_done;
    }
    return false;
}

}  // namespace qdq
