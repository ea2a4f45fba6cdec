// What a run tells its user while it trains: every log record appended as one JSON line to
// <output_dir>/metrics.jsonl (step, epoch, loss, learning_rate, grad_norm, seconds; eval_*
// metrics), and on the terminal either a progress bar with rate and ETA (when stderr is a
// terminal) or one plain line per record (logs, CI, nohup).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace qdq {

class RunLog {
public:
    // Keeps the records of steps up to resume_step and drops later ones: those came from the
    // part of an interrupted run that its last checkpoint does not hold, and will be written again.
    // An empty path is a log that says nothing (a data-parallel run's ranks other than 0).
    RunLog(const std::string& path, int64_t resume_step, int64_t total_steps, bool progress_bar);
    ~RunLog();
    RunLog(const RunLog&) = delete;
    RunLog& operator=(const RunLog&) = delete;

    void write(const nlohmann::json& record);
    // After each step: redraws the bar (terminal only). steps_per_second is this run's rate.
    void progress(int64_t step, double loss, double steps_per_second);
    // A line for the user outside the record stream (resuming, stopping, the final result).
    void note(const std::string& line);

private:
    void clear_bar();

    std::FILE* file_ = nullptr;
    std::string path_;
    int64_t total_steps_;
    bool progress_bar_;
    bool bar_shown_ = false;
};

// "1:02:03" / "4:05": a duration for a terminal line.
std::string format_duration(double seconds);

}  // namespace qdq
