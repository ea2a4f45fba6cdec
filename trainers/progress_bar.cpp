#include "trainers/progress_bar.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace qdq {

namespace {

std::atomic<bool> bars_shown{false};

double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// tqdm's mininterval: a loop of fast steps would otherwise spend its time on the terminal.
constexpr double kRedrawSeconds = 0.1;
constexpr int kBarWidth = 30;

std::string printed(const char* format, double value) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, format, value);
    return buffer;
}

}  // namespace

void set_progress_bars_shown(bool shown) { bars_shown = shown; }
bool progress_bars_shown() { return bars_shown; }

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    long s = std::lround(seconds);
    char buffer[32];
    if (s >= 3600) std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
    return buffer;
}

std::string progress_line(const std::string& label, const ProgressCount& c, const std::string& detail) {
    const int64_t timed = c.step - c.start_step;
    const double rate = timed > 0 && c.elapsed_seconds > 0 ? (double)timed / c.elapsed_seconds : NAN;
    const std::string rate_text = std::isnan(rate) ? "? it/s"
                                  : rate >= 1     ? printed("%.2f it/s", rate)
                                                  : printed("%.2f s/it", 1 / rate);
    std::string line = label + " ";
    if (c.total > 0) {
        const double fraction = std::clamp((double)c.step / (double)c.total, 0.0, 1.0);
        const int filled = (int)(fraction * kBarWidth);
        std::string bar(filled, '=');
        if (filled < kBarWidth) bar += '>' + std::string(kBarWidth - filled - 1, ' ');
        const double remaining = c.step >= c.total ? 0 : (double)(c.total - c.step) / rate;
        line += "[" + bar + "] " + std::to_string(c.step) + "/" + std::to_string(c.total) + " " +
                printed("%3.0f%%", 100 * fraction) + "  " + rate_text + "  elapsed " +
                format_duration(c.elapsed_seconds) + "  remaining " + format_duration(remaining);
    } else {
        line += std::to_string(c.step) + "  " + rate_text + "  elapsed " + format_duration(c.elapsed_seconds);
    }
    if (!detail.empty()) line += "  " + detail;
    return line;
}

ProgressBar::ProgressBar(std::string label, int64_t total, int64_t start_step)
    : label_(std::move(label)), total_(total), start_step_(start_step), start_seconds_(now_seconds()),
      shown_(progress_bars_shown()) {}

ProgressBar::~ProgressBar() { erase(); }

void ProgressBar::update(int64_t step, const std::string& detail) {
    if (!shown_) return;
    const double now = now_seconds();
    const bool last = total_ > 0 && step >= total_;
    if (drawn_ && !last && now - last_draw_seconds_ < kRedrawSeconds) return;
    const std::string line = progress_line(label_, {step, total_, start_step_, now - start_seconds_}, detail);
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
    last_draw_seconds_ = now;
}

void ProgressBar::erase() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace qdq
