#include "trainers/resume.h"

#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "json/json_file.h"
#include "qdqbert/qdq_placement.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

// Keys that may change between a run and its resumption: where and how often it reports, the
// device, and where the data files sit (compared by file name, so a run moves between machines).
const char* kFreeTrainingKeys[] = {"output_dir", "logging_steps", "eval_steps", "save_steps",
                                   "save_total_limit", "per_device_eval_batch_size", "load_best_model_at_end",
                                   "metric_for_best_model", "greater_is_better", "ddp_bucket_cap_mb",
                                   "use_cpu", "report_to", "logging_dir"};

nlohmann::json comparable(nlohmann::json config) {
    for (const char* key : kFreeTrainingKeys) config["training"].erase(key);
    // Keys older runs lack, as those runs had them.
    if (!config["training"].contains("bf16")) config["training"]["bf16"] = false;
    if (!config["training"].contains("gradient_accumulation_steps")) config["training"]["gradient_accumulation_steps"] = 1;
    nlohmann::json& data = config["data"];
    data.erase("data_dir");
    data.erase("eval_files");
    data.erase("max_eval_examples");
    for (auto& f : data["train_files"]) f = fs::path(f.get<std::string>()).filename().string();
    data["vocab"] = fs::path(data["vocab"].get<std::string>()).filename().string();
    config["model"].erase("init");  // the checkpoint's weights replace it
    config.erase("pipeline");       // what happens after this run
    // Older runs saved the quantization section as the config gave it: compared as read.
    if (config.contains("quantization"))
        config["quantization"] = quantization_config_to_json(quantization_config_from_json(config["quantization"], "checkpoint"));
    return config;
}

}  // namespace

void check_resumable(const nlohmann::json& saved, const nlohmann::json& current, const std::string& checkpoint) {
    nlohmann::json diff = nlohmann::json::diff(comparable(saved), comparable(current));
    if (diff.empty()) return;
    std::string where = diff[0].value("path", "?");
    throw std::runtime_error(checkpoint + ": was written by a run with a different config (" + where +
                             "); resuming would not give the run either config describes. Use a new "
                             "training.output_dir, or --no-resume to start over in this one");
}

std::optional<ReadableCheckpoint> newest_readable_checkpoint(const std::string& dir, bool set_aside) {
    std::vector<std::string> existing = list_checkpoints(dir);
    for (auto it = existing.rbegin(); it != existing.rend(); ++it) {
        try {
            return ReadableCheckpoint{*it, load_checkpoint(*it)};
        } catch (const std::exception& e) {
            const std::string aside = *it + ".unreadable";
            std::cerr << "qdqtrain: " << *it << " cannot be read (" << e.what() << ")"
                      << (set_aside ? "; kept as " + aside : std::string()) << "; trying the checkpoint before it\n";
            if (set_aside) fs::rename(*it, aside);
        }
    }
    if (!existing.empty())
        throw std::runtime_error(dir + ": none of its " + std::to_string(existing.size()) +
                                 " checkpoints can be read; --no-resume starts the run over");
    return std::nullopt;
}

std::optional<nlohmann::json> finished_run_metrics(const std::string& dir, const nlohmann::json& resolved) {
    const std::string config = dir + "/config.json", results = dir + "/eval_results.json";
    if (!fs::exists(dir + "/model.h5") || !fs::exists(results) || !fs::exists(config)) return std::nullopt;
    try {
        check_resumable(read_json_file(config), resolved, config);
    } catch (const std::runtime_error&) {
        return std::nullopt;  // another run's results: train() says why when it resumes or starts
    }
    return read_json_file(results);
}

}  // namespace qdq
