#include "app/hf_export.h"

#include <filesystem>
#include <stdexcept>

#include "json/json_file.h"
#include "nn/pretrained.h"
#include "trainers/checkpoint.h"
#include "trainers/task.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

std::string architecture_of(const RunConfig& config) {
    if (config.data.task == "mlm") return "BertForMaskedLM";
    if (config.data.task == "classification") return "BertForSequenceClassification";
    return "BertForQuestionAnswering";
}

}  // namespace

nlohmann::json save_task_pretrained(const RunConfig& config, const std::string& checkpoint,
                                    const std::string& out_dir) {
    if (config.quantization)
        throw std::invalid_argument(config.source + ": quantization: save-pretrained writes float models only "
                                                    "(Hugging Face's BERT has no quantizers); use 'qdqtrain export' "
                                                    "for a quantized model");
    std::unique_ptr<Task> task = make_task(config, {.train = false, .eval = false, .weights = false, .on_run_device = false});
    load_model_weights(task->model(), checkpoint);
    const std::string architecture = architecture_of(config);
    nn::save_pretrained(task->model(), task->model_config(), out_dir, architecture);
    fs::copy_file(config.data.vocab, fs::path(out_dir) / "vocab.txt", fs::copy_options::overwrite_existing);
    const nlohmann::json tokenizer = {{"tokenizer_class", "BertTokenizer"},
                                      {"do_lower_case", config.data.do_lower_case},
                                      {"model_max_length", task->model_config().max_position_embeddings}};
    write_json_file((fs::path(out_dir) / "tokenizer_config.json").string(), tokenizer);
    return {{"directory", out_dir},
            {"architecture", architecture},
            {"files", {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"}}};
}

}  // namespace qdq
