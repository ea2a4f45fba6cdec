// A progress bar on stderr, redrawn in place, for the loops a user waits on: training steps
// (trainers/run_log.h), evaluation batches (trainers/task.h run_eval_model, the masked-LM
// task's) and calibration batches (stages/calibrate.h). Bars are off unless the application turns
// them on, which it does when stderr is a terminal, on rank 0 of a run, as
// transformers.utils.logging.disable_progress_bar switches tqdm for a whole process: tests,
// logs and pipes see the plain lines alone.
#pragma once

#include <cstdint>
#include <string>

namespace qdq {

void set_progress_bars_shown(bool shown);
bool progress_bars_shown();

// Where a loop stands: `step` of `total` steps done (total <= 0: unknown), of which those after
// `start_step` took `elapsed_seconds` (a resumed run's rate counts its own steps only).
struct ProgressCount {
    int64_t step = 0;
    int64_t total = 0;
    int64_t start_step = 0;
    double elapsed_seconds = 0;
};

// The bar's text, without the carriage return that redraws it, e.g.
//   eval [=========>          ] 5/10  50%  2.50 it/s  elapsed 0:02  remaining 0:02
// with `detail` appended ("loss 0.4321"); below one step a second the rate reads "4.00 s/it";
// "?" for the rate and remaining time before any step was timed. An unknown total shows the
// count, rate and elapsed time alone.
std::string progress_line(const std::string& label, const ProgressCount& count, const std::string& detail = "");

// "1:02:03" / "4:05": a duration for a terminal line; "?" when not finite.
std::string format_duration(double seconds);

// One loop's bar: timed from construction, drawn at most ten times a second (and at the last
// step), erased when it goes out of scope.
class ProgressBar {
public:
    ProgressBar(std::string label, int64_t total, int64_t start_step = 0);
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    void update(int64_t step, const std::string& detail = "");
    // Clears the line before something else is printed; the next update draws it again.
    void erase();

private:
    std::string label_;
    int64_t total_, start_step_;
    double start_seconds_, last_draw_seconds_ = -1;
    bool shown_, drawn_ = false;
};

}  // namespace qdq
