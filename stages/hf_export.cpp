#include "stages/hf_export.h"

#include <filesystem>
#include <stdexcept>

#include "data/tokenizer.h"
#include "json/json_file.h"
#include "nn/pretrained.h"
#include "trainers/checkpoint.h"
#include "trainers/task.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

std::string architecture_of(const RunConfig& config) {
    switch (config.data.task) {
    case TaskKind::mlm: return "BertForMaskedLM";
    case TaskKind::classification: return "BertForSequenceClassification";
    case TaskKind::squad: return "BertForQuestionAnswering";
    }
    throw std::logic_error("architecture_of: unknown task");
}

// The run's tokenizer files under their Hugging Face names, listed in `files`; returns the
// start of tokenizer_config.json. A transplanted RoBERTa keeps its BPE: transformers' BertModel
// reads it through tokenizer_class.
nlohmann::json copy_tokenizer_files(const RunConfig& config, const std::string& out_dir, nlohmann::json& files) {
    const TokenizerFiles source = tokenizer_files(config.data.vocab);
    const auto copy = [&](const std::string& from, const char* name) {
        fs::copy_file(from, fs::path(out_dir) / name, fs::copy_options::overwrite_existing);
        files.push_back(name);
    };
    if (source.kind == TokenizerKind::ByteLevelBpe) {
        copy(source.vocab, "vocab.json");
        copy(source.merges, "merges.txt");
        return {{"tokenizer_class", "RobertaTokenizer"}};
    }
    copy(source.vocab, "vocab.txt");
    return {{"tokenizer_class", "BertTokenizer"}, {"do_lower_case", config.data.do_lower_case.value_or(true)}};
}

// A run's folder holds its own config.json, which its resume and reruns read: the model's
// written over it would lose the run.
void check_not_a_run_folder(const std::string& out_dir) {
    const fs::path config = fs::path(out_dir) / "config.json";
    if (fs::exists(config) && read_json_file(config.string()).contains("training"))
        throw std::runtime_error(out_dir + " is a run's folder: its config.json is the run's, which the model's would "
                                           "replace; give --out a folder of its own");
}

}  // namespace

nlohmann::json save_task_pretrained(const RunConfig& config, const std::string& checkpoint,
                                    const std::string& out_dir) {
    if (config.quantization)
        throw ConfigError(config.source + ": quantization: save-pretrained writes float models only "
                          "(Hugging Face's BERT has no quantizers); use 'qdqtrain export' "
                          "for a quantized model");
    check_not_a_run_folder(out_dir);
    std::unique_ptr<Task> task = make_task(config_for_checkpoint(config, checkpoint),
                                           {.train = false, .eval = false, .on_run_device = false},
                                           [&](nn::Module& model) { load_model_weights(model, checkpoint); });
    const std::string architecture = architecture_of(config);
    nn::save_pretrained(task->model(), task->model_config(), out_dir, architecture);
    nlohmann::json files = {"config.json", "model.safetensors"};
    nlohmann::json tokenizer = copy_tokenizer_files(config, out_dir, files);
    tokenizer["model_max_length"] = task->model_config().max_position_embeddings;
    write_json_file((fs::path(out_dir) / "tokenizer_config.json").string(), tokenizer);
    files.push_back("tokenizer_config.json");
    return {{"directory", out_dir}, {"architecture", architecture}, {"files", files}};
}

}  // namespace qdq
