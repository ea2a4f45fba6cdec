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

RunLog::RunLog(const std::string& path, int64_t resume_step, int64_t total_steps, const std::string& events_dir)
    : path_(path), bar_("train", total_steps, resume_step) {
    if (path.empty()) return;
    const int64_t kept_to = resume_step > 0 ? resume_step : -1;
    keep_records_up_to(path, kept_to);
    file_ = std::fopen(path.c_str(), "a");
    if (!file_) throw std::runtime_error(path + ": cannot open for appending");
    if (events_dir.empty()) return;
    keep_events_up_to(events_dir, kept_to);
    events_.emplace(events_dir);
}

RunLog::~RunLog() {
    if (file_) std::fclose(file_);
}

void RunLog::write(const nlohmann::json& record) {
    if (!file_) return;
    std::string line = record.dump();
    if (std::fprintf(file_, "%s\n", line.c_str()) < 0 || std::fflush(file_) != 0)
        throw std::runtime_error(path_ + ": cannot write");
    if (events_ && record.contains("step")) events_->write_scalars(record["step"].get<int64_t>(), record_scalars(record));
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
    bar_.erase();
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

void RunLog::progress(int64_t step, double loss) {
    if (!file_) return;
    char detail[32];
    std::snprintf(detail, sizeof detail, "loss %.4f", loss);
    bar_.update(step, detail);
}

}  // namespace qdq
