#include "trainers/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <iostream>

#include "io/hdf5_weights.h"
#include "nn/pretrained.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

const char* kModel = "model.";
const char* kOptimizer = "optimizer.";

nlohmann::json state_to_json(const TrainerState& s) {
    nlohmann::json j = {{"step", s.step},
                        {"loader", {{"epoch", s.loader.epoch}, {"index", s.loader.index}}},
                        {"dropout_rng", s.dropout_rng},
                        {"data_rng", s.data_rng},
                        {"best_checkpoint", s.best_checkpoint},
                        {"log_loss_sum", s.log_loss_sum},
                        {"log_steps", s.log_steps},
                        {"seconds", s.seconds},
                        {"num_input_tokens_seen", s.input_tokens_seen}};
    j["best_metric"] = s.best_metric ? nlohmann::json(*s.best_metric) : nlohmann::json();
    if (!s.ranks.empty()) {
        j["ranks"] = nlohmann::json::array();
        for (const RankRngs& r : s.ranks) j["ranks"].push_back({{"dropout_rng", r.dropout_rng}, {"data_rng", r.data_rng}});
    }
    return j;
}

TrainerState state_from_json(const nlohmann::json& j) {
    TrainerState s;
    s.step = j.at("step").get<int64_t>();
    s.loader.epoch = j.at("loader").at("epoch").get<int64_t>();
    s.loader.index = j.at("loader").at("index").get<int64_t>();
    s.dropout_rng = j.at("dropout_rng").get<std::array<uint64_t, 4>>();
    s.data_rng = j.at("data_rng").get<std::array<uint64_t, 4>>();
    s.best_checkpoint = j.at("best_checkpoint").get<std::string>();
    if (!j.at("best_metric").is_null()) s.best_metric = j.at("best_metric").get<double>();
    s.log_loss_sum = j.at("log_loss_sum").get<double>();
    s.log_steps = j.at("log_steps").get<int64_t>();
    s.seconds = j.at("seconds").get<double>();
    s.input_tokens_seen = j.value("num_input_tokens_seen", (int64_t)-1);
    if (j.contains("ranks"))
        for (const nlohmann::json& r : j.at("ranks"))
            s.ranks.push_back({r.at("dropout_rng").get<std::array<uint64_t, 4>>(), r.at("data_rng").get<std::array<uint64_t, 4>>()});
    return s;
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c) {
    NamedTensors tensors;
    for (const NamedTensor& t : c.model) tensors.push_back({kModel + t.name, t.tensor});
    for (const NamedTensor& t : c.optimizer) tensors.push_back({kOptimizer + t.name, t.tensor});
    nlohmann::json meta = {{"format", "qdqtrain-checkpoint-1"},
                           {"trainer_state", state_to_json(c.state)},
                           {"config", c.config}};
    std::string tmp = path + ".tmp";
    save_hdf5_weights(tmp, tensors, meta.dump());
    fs::rename(tmp, path);  // atomic on POSIX: readers see the old file or the new one
}

Checkpoint load_checkpoint(const std::string& path) {
    Hdf5Weights file = load_hdf5_weights(path);
    nlohmann::json meta = nlohmann::json::parse(file.config_json, nullptr, false);
    if (meta.is_discarded() || !meta.is_object() || meta.value("format", "") != "qdqtrain-checkpoint-1")
        throw std::runtime_error(path + ": not a qdqtrain checkpoint (no trainer state)");
    Checkpoint c;
    try {
        c.state = state_from_json(meta.at("trainer_state"));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path + ": damaged trainer state: " + e.what());
    }
    c.config = meta.at("config");
    for (NamedTensor& t : file.tensors) {
        if (t.name.starts_with(kModel)) c.model.push_back({t.name.substr(6), t.tensor});
        else if (t.name.starts_with(kOptimizer)) c.optimizer.push_back({t.name.substr(10), t.tensor});
        else throw std::runtime_error(path + ": unexpected dataset '" + t.name + "'");
    }
    return c;
}

nlohmann::json checkpoint_run_config(const std::string& path) {
    if (fs::path(path).extension() != ".h5" || !fs::is_regular_file(path)) return nullptr;
    nlohmann::json meta = nlohmann::json::parse(load_hdf5_config(path), nullptr, false);
    if (meta.is_discarded() || !meta.is_object() || meta.value("format", "") != "qdqtrain-checkpoint-1") return nullptr;
    return meta.at("config");
}

nn::LoadReport read_model_weights(nn::Module& model, const std::string& path) {
    if (!checkpoint_run_config(path).is_null()) return nn::load_state_dict(model, load_checkpoint(path).model, path);
    return nn::load_pretrained_weights(model, path);
}

void load_model_weights(nn::Module& model, const std::string& path) {
    nn::LoadReport report = read_model_weights(model, path);
    // Ranges missing from a float model are expected before calibration: one line, not one per
    // quantizer. Training refuses to quantize without them (qdqbert/calibration.h check_calibrated).
    const auto is_range = [](const std::string& key) { return key.ends_with("_amax"); };
    const size_t ranges = (size_t)std::count_if(report.missing.begin(), report.missing.end(), is_range);
    report.missing.erase(std::remove_if(report.missing.begin(), report.missing.end(), is_range), report.missing.end());
    std::string summary = report.summary();
    if (!summary.empty()) std::cerr << summary;
    if (ranges > 0) std::cerr << path << " holds no ranges for " << ranges << " quantizers (not calibrated)\n";
}

std::string checkpoint_name(int64_t step) { return "checkpoint-" + std::to_string(step) + ".h5"; }

std::vector<std::string> list_checkpoints(const std::string& dir) {
    std::vector<std::pair<int64_t, std::string>> found;
    if (!fs::is_directory(dir)) return {};
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::string name = entry.path().filename().string();
        if (!name.starts_with("checkpoint-") || entry.path().extension() != ".h5") continue;
        std::string digits = name.substr(11, name.size() - 14);
        if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
        found.emplace_back(std::stoll(digits), entry.path().string());
    }
    std::sort(found.begin(), found.end());
    std::vector<std::string> out;
    for (auto& [step, path] : found) out.push_back(path);
    return out;
}

void prune_checkpoints(const std::string& dir, int keep, const std::string& protect) {
    std::vector<std::string> all = list_checkpoints(dir);
    int64_t excess = (int64_t)all.size() - keep;
    for (const std::string& path : all) {
        if (excess <= 0) break;
        if (fs::path(path).filename() == protect) continue;
        fs::remove(path);
        --excess;
    }
}

}  // namespace qdq
