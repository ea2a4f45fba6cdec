// What a run tells its user while it trains: every log record appended as one JSON line to
// <output_dir>/metrics.jsonl (step, epoch, loss, learning_rate, grad_norm, seconds; eval_*
// metrics), with training.report_to "tensorboard" the same numbers as TensorBoard scalars
// (trainers/tensorboard_events.h), and on the terminal one plain line per record, under a
// progress bar when bars are shown (trainers/progress_bar.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainers/progress_bar.h"
#include "trainers/tensorboard_events.h"

namespace qdq {

class RunLog {
public:
    // Keeps the records of steps up to resume_step and drops later ones: those came from the
    // part of an interrupted run that its last checkpoint does not hold, and will be written again.
    // A run that starts at step 0 keeps none: no checkpoint holds step 0, and eval_on_start's
    // record there is written again.
    // The event files of `events_dir` (empty: no TensorBoard) are kept to the same steps, and
    // this run's events go to a new file there. An empty path is a log that says nothing (a
    // data-parallel run's ranks other than 0).
    RunLog(const std::string& path, int64_t resume_step, int64_t total_steps, const std::string& events_dir);
    ~RunLog();
    RunLog(const RunLog&) = delete;
    RunLog& operator=(const RunLog&) = delete;

    void write(const nlohmann::json& record);
    // After each step: redraws the bar, with the step's loss.
    void progress(int64_t step, double loss);
    // A line for the user outside the record stream (resuming, stopping, the final result).
    void note(const std::string& line);

private:
    std::FILE* file_ = nullptr;
    std::string path_;
    std::optional<EventFileWriter> events_;
    ProgressBar bar_;
};

}  // namespace qdq
