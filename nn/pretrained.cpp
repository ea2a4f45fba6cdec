#include "nn/pretrained.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "io/hdf5_weights.h"
#include "io/safetensors.h"
#include "json/json_file.h"
#include "nn/roberta.h"

namespace qdq::nn {

namespace fs = std::filesystem;

namespace {

bool has_extension(const std::string& path, const char* ext) { return fs::path(path).extension() == ext; }

nlohmann::json parse_json(const std::string& text, const std::string& where) {
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw std::runtime_error(where + ": not valid JSON: " + json_error_text(e));
    }
}

BertConfig config_from_json(const nlohmann::json& j, const std::string& where) {
    if (j.is_object() && j.value("model_type", "bert") == "roberta")
        return bert_config_from_roberta_json(j, where);
    return bert_config_from_json(j, where);
}

}  // namespace

BertConfig load_pretrained_config(const std::string& path) {
    if (has_extension(path, ".h5")) {
        std::string config = load_hdf5_weights(path).config_json;
        if (config.empty()) throw std::runtime_error(path + ": no config attribute");
        return config_from_json(parse_json(config, path), path);
    }
    std::string file = fs::is_directory(path) ? (fs::path(path) / "config.json").string() : path;
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot open config " + file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return config_from_json(parse_json(text, file), file);
}

LoadReport load_pretrained_weights(Module& model, const std::string& path) {
    std::string file = fs::is_directory(path) ? (fs::path(path) / "model.safetensors").string() : path;
    NamedTensors tensors = has_extension(file, ".h5") ? load_hdf5_weights(file).tensors
                                                      : load_safetensors(file).tensors;
    if (is_roberta_checkpoint(tensors)) tensors = roberta_to_bert(tensors);
    return load_state_dict(model, tensors, file);
}

void save_pretrained(const Module& model, const BertConfig& config, const std::string& dir,
                     const std::string& architecture) {
    fs::create_directories(dir);
    nlohmann::json config_json = bert_config_to_json(config);
    if (!architecture.empty()) config_json["architectures"] = {architecture};
    std::ofstream out(fs::path(dir) / "config.json");
    out << config_json.dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + (fs::path(dir) / "config.json").string());
    save_safetensors((fs::path(dir) / "model.safetensors").string(), model.state_dict(), {{"format", "pt"}});
}

void save_hdf5(const Module& model, const BertConfig& config, const std::string& path) {
    save_hdf5_weights(path, model.state_dict(), bert_config_to_json(config).dump(), Hdf5Storage::Compressed);
}

}  // namespace qdq::nn
