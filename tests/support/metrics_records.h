// A run's log as the trainer wrote it (metrics.jsonl, trainers/run_log.h), for comparing runs.
#pragma once

#include <filesystem>
#include <fstream>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdq::testing {

// The records of <dir>/metrics.jsonl without their wall-clock fields ("seconds", and a
// data-parallel run's "allreduce_wait_seconds"): two runs that computed the same things have
// equal records.
inline std::vector<nlohmann::json> metrics_records(const std::filesystem::path& dir) {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
        nlohmann::json r = nlohmann::json::parse(line);
        r.erase("seconds");
        r.erase("allreduce_wait_seconds");
        out.push_back(r);
    }
    return out;
}

// The steps of <dir>/metrics.jsonl's evaluation records (those with eval_accuracy), in order.
inline std::vector<int64_t> evaluated_steps(const std::filesystem::path& dir) {
    std::vector<int64_t> steps;
    for (const nlohmann::json& r : metrics_records(dir))
        if (r.contains("eval_accuracy")) steps.push_back(r["step"].get<int64_t>());
    return steps;
}

}  // namespace qdq::testing
