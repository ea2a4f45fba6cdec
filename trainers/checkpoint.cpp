#include "trainers/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <iostream>

#include "io/hdf5_weights.h"
#include "json/json_file.h"
#include "nn/pretrained.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

const char* kModel = "model.";
const char* kOptimizer = "optimizer.";
const char* kFormat = "qdqtrain-checkpoint-1";

nlohmann::json state_to_json(const TrainerState& s) {
    nlohmann::json j = {{"step", s.step},
                        {"loader", {{"epoch", s.loader.epoch}, {"index", s.loader.index}}},
                        {"dropout_rng", s.dropout_rng},
                        {"data_rng", s.data_rng},
                        {"best_checkpoint", s.best_checkpoint},
                        {"log_loss_sum", s.log_loss_sum},
                        {"log_steps", s.log_steps},
                        {"seconds", s.seconds},
                        {"num_input_tokens_seen", s.input_tokens_seen},
                        {"early_stopping_patience_counter", s.evaluations_without_improvement}};
    j["best_metric"] = s.best_metric ? nlohmann::json(*s.best_metric) : nlohmann::json();
    if (!s.ranks.empty()) {
        j["ranks"] = nlohmann::json::array();
        for (const RankRngs& r : s.ranks) j["ranks"].push_back({{"dropout_rng", r.dropout_rng}, {"data_rng", r.data_rng}});
    }
    if (s.plateau) j["plateau"] = plateau_state_to_json(*s.plateau);
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
    s.evaluations_without_improvement = j.value("early_stopping_patience_counter", (int64_t)0);
    if (j.contains("ranks"))
        for (const nlohmann::json& r : j.at("ranks"))
            s.ranks.push_back({r.at("dropout_rng").get<std::array<uint64_t, 4>>(), r.at("data_rng").get<std::array<uint64_t, 4>>()});
    if (j.contains("plateau")) s.plateau = plateau_state_from_json(j.at("plateau"));
    return s;
}

// The metadata of a qdqtrain checkpoint as its root attribute holds it; null for any other text.
nlohmann::json parse_checkpoint_meta(const std::string& config_json) {
    nlohmann::json meta = nlohmann::json::parse(config_json, nullptr, false);
    if (meta.is_discarded() || !meta.is_object() || meta.value("format", "") != kFormat) return nullptr;
    return meta;
}

// The metadata of the file at `path` when it is a qdqtrain checkpoint, else null.
nlohmann::json checkpoint_meta(const std::string& path) {
    if (fs::path(path).extension() != ".h5" || !fs::is_regular_file(path)) return nullptr;
    return parse_checkpoint_meta(load_hdf5_config(path));
}

std::string weights_field(const nlohmann::json& meta, const std::string& path) {
    if (!meta.contains("weights")) return "";
    if (!meta.at("weights").is_string()) throw std::runtime_error(path + ": \"weights\" is not a file name");
    return meta.at("weights").get<std::string>();
}

// `weights` as the checkpoint at `path` names it: relative to that checkpoint's directory.
std::string resolve_weights(const std::string& path, const std::string& weights) {
    return (fs::path(path).parent_path() / weights).lexically_normal().string();
}

// One file as it is: a partial checkpoint's model without the file it names.
Checkpoint read_checkpoint_file(const std::string& path) {
    Hdf5Weights file = load_hdf5_weights(path);
    const nlohmann::json meta = parse_checkpoint_meta(file.config_json);
    if (meta.is_null()) throw std::runtime_error(path + ": not a qdqtrain checkpoint (no trainer state)");
    Checkpoint c;
    try {
        c.state = state_from_json(meta.at("trainer_state"));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(path + ": damaged trainer state: " + json_error_text(e));
    }
    c.config = run_config_from_json(meta.at("config"), path);
    c.weights = weights_field(meta, path);
    for (NamedTensor& t : file.tensors) {
        if (t.name.starts_with(kModel)) c.model.push_back({t.name.substr(6), t.tensor});
        else if (t.name.starts_with(kOptimizer)) c.optimizer.push_back({t.name.substr(10), t.tensor});
        else throw std::runtime_error(path + ": unexpected dataset '" + t.name + "'");
    }
    return c;
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c, Hdf5Storage storage) {
    NamedTensors tensors;
    for (const NamedTensor& t : c.model) tensors.push_back({kModel + t.name, t.tensor});
    for (const NamedTensor& t : c.optimizer) tensors.push_back({kOptimizer + t.name, t.tensor});
    nlohmann::json meta = {{"format", kFormat},
                           {"trainer_state", state_to_json(c.state)},
                           {"config", run_config_to_json(c.config)}};
    // Only where there is another file: a whole checkpoint's metadata stays as it always was.
    if (!c.weights.empty()) meta["weights"] = c.weights;
    std::string tmp = path + ".tmp";
    save_hdf5_weights(tmp, tensors, meta.dump(), storage);
    fs::rename(tmp, path);  // atomic on POSIX: readers see the old file or the new one
}

Checkpoint load_checkpoint(const std::string& path) {
    Checkpoint c = read_checkpoint_file(path);
    if (c.weights.empty()) return c;
    const std::string base = resolve_weights(path, c.weights);
    Checkpoint rest;
    try {
        rest = read_checkpoint_file(base);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + " holds part of a model; the rest, in " + base + ", could not be read: " + e.what());
    }
    // One level only: a chain of files could also close into a loop.
    if (!rest.weights.empty())
        throw std::runtime_error(path + " holds part of a model; the rest, in " + base +
                                 ", is not whole: it names yet another file, " + rest.weights);
    for (NamedTensor& t : c.model) {
        auto same = std::find_if(rest.model.begin(), rest.model.end(), [&](const NamedTensor& r) { return r.name == t.name; });
        if (same != rest.model.end()) same->tensor = t.tensor;
        else rest.model.push_back(t);
    }
    c.model = std::move(rest.model);
    c.weights.clear();
    return c;
}

std::optional<RunConfig> checkpoint_run_config(const std::string& path) {
    const nlohmann::json meta = checkpoint_meta(path);
    if (meta.is_null()) return std::nullopt;
    return run_config_from_json(meta.at("config"), path);
}

std::string checkpoint_weights_file(const std::string& path) {
    const nlohmann::json meta = checkpoint_meta(path);
    const std::string weights = meta.is_null() ? "" : weights_field(meta, path);
    return weights.empty() ? "" : resolve_weights(path, weights);
}

SplitState split_quantizer_state(const nn::Module& model) {
    std::vector<std::string> prefixes;
    for (const auto& [name, q] : model.named_quantizers()) prefixes.push_back(name + ".");
    SplitState split;
    for (const NamedTensor& t : model.state_dict()) {
        const bool quantizer = std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return t.name.starts_with(p); });
        (quantizer ? split.quantizers : split.weights).push_back(t);
    }
    return split;
}

nn::LoadReport read_model_weights(nn::Module& model, const std::string& path) {
    if (!checkpoint_meta(path).is_null()) return nn::load_state_dict(model, load_checkpoint(path).model, path);
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

void prune_checkpoints(const std::string& dir, int keep, const std::vector<std::string>& protect) {
    std::vector<std::string> all = list_checkpoints(dir);
    int64_t excess = (int64_t)all.size() - keep;
    for (const std::string& path : all) {
        if (excess <= 0) break;
        if (std::find(protect.begin(), protect.end(), fs::path(path).filename().string()) != protect.end()) continue;
        fs::remove(path);
        --excess;
    }
}

}  // namespace qdq
