#include "trainers/run_log.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace qdq {

namespace fs = std::filesystem;

namespace {

// Rewrites the file with the records of steps <= last_step, through a temporary file so that a
// crash here cannot lose the records that stay.
void keep_records_up_to(const std::string& path, int64_t last_step) {
    if (!fs::exists(path)) return;
    std::ifstream in(path);
    std::vector<std::string> kept;
    std::string line;
    while (std::getline(in, line)) {
        nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        // A torn last line from a killed run is not JSON: it is dropped with the rest.
        if (record.is_discarded() || !record.contains("step")) continue;
        if (record["step"].get<int64_t>() <= last_step) kept.push_back(line);
    }
    std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        for (const std::string& l : kept) out << l << '\n';
        if (!out) throw std::runtime_error(tmp + ": cannot write");
    }
    fs::rename(tmp, path);
}

std::string format_value(const nlohmann::json& v) {
    if (!v.is_number_float()) return v.dump();
    char buffer[32];
    double x = v.get<double>();
    std::snprintf(buffer, sizeof buffer, (x != 0 && std::fabs(x) < 1e-3) ? "%.3e" : "%.4f", x);
    return buffer;
}

}  // namespace

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    long s = std::lround(seconds);
    char buffer[32];
    if (s >= 3600) std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
    return buffer;
}

RunLog::RunLog(const std::string& path, int64_t resume_step, int64_t total_steps, bool progress_bar)
    : path_(path), total_steps_(total_steps), progress_bar_(progress_bar && !path.empty()) {
    if (path.empty()) return;
    keep_records_up_to(path, resume_step);
    file_ = std::fopen(path.c_str(), "a");
    if (!file_) throw std::runtime_error(path + ": cannot open for appending");
}

RunLog::~RunLog() {
    clear_bar();
    if (file_) std::fclose(file_);
}

void RunLog::write(const nlohmann::json& record) {
    if (!file_) return;
    std::string line = record.dump();
    if (std::fprintf(file_, "%s\n", line.c_str()) < 0 || std::fflush(file_) != 0)
        throw std::runtime_error(path_ + ": cannot write");
    std::string text = record.contains("step") ? "step " + record["step"].dump() : "";
    for (const auto& [key, value] : record.items()) {
        if (key == "step") continue;
        if (!text.empty()) text += "  ";
        text += key + " " + format_value(value);
    }
    note(text);
}

void RunLog::note(const std::string& line) {
    if (!file_) return;
    clear_bar();
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

void RunLog::progress(int64_t step, double loss, double steps_per_second) {
    if (!progress_bar_) return;
    const int width = 30;
    double fraction = total_steps_ > 0 ? (double)step / (double)total_steps_ : 0;
    int filled = (int)(fraction * width);
    std::string bar(filled, '=');
    if (filled < width) bar += '>' + std::string(width - filled - 1, ' ');
    double eta = steps_per_second > 0 ? (double)(total_steps_ - step) / steps_per_second : NAN;
    std::fprintf(stderr, "\r[%s] %lld/%lld %3.0f%%  loss %.4f  %.2f it/s  ETA %s\033[K", bar.c_str(),
                 (long long)step, (long long)total_steps_, 100 * fraction, loss, steps_per_second,
                 format_duration(eta).c_str());
    std::fflush(stderr);
    bar_shown_ = true;
}

void RunLog::clear_bar() {
    if (!bar_shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    bar_shown_ = false;
}

}  // namespace qdq
