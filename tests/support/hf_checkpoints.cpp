#include "tests/support/hf_checkpoints.h"

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "data/data_dir.h"
#include "io/safetensors.h"
#include "nn/heads.h"
#include "nn/roberta.h"

namespace qdq::testing {

namespace fs = std::filesystem;

namespace {

// config.json as the Hub serves it for each checkpoint (fields transformers writes but this
// project ignores included: the loader must take the real file).
nlohmann::json public_config(HfCheckpoint which) {
    nlohmann::json bert = {
        {"architectures", {"BertForMaskedLM"}}, {"attention_probs_dropout_prob", 0.1}, {"gradient_checkpointing", false},
        {"hidden_act", "gelu"}, {"hidden_dropout_prob", 0.1}, {"hidden_size", 768}, {"initializer_range", 0.02},
        {"intermediate_size", 3072}, {"layer_norm_eps", 1e-12}, {"max_position_embeddings", 512}, {"model_type", "bert"},
        {"num_attention_heads", 12}, {"num_hidden_layers", 12}, {"pad_token_id", 0},
        {"position_embedding_type", "absolute"}, {"transformers_version", "4.6.0.dev0"}, {"type_vocab_size", 2},
        {"use_cache", true}, {"vocab_size", 30522}};
    switch (which) {
    case HfCheckpoint::BertBaseUncased: return bert;
    case HfCheckpoint::BertLargeUncasedWwm:
        bert.update({{"hidden_size", 1024}, {"intermediate_size", 4096}, {"num_attention_heads", 16}, {"num_hidden_layers", 24}});
        return bert;
    case HfCheckpoint::BertTiny:
        bert.update({{"hidden_size", 128}, {"intermediate_size", 512}, {"num_attention_heads", 2}, {"num_hidden_layers", 2}});
        return bert;
    case HfCheckpoint::RobertaBase:
        return {{"architectures", {"RobertaForMaskedLM"}}, {"attention_probs_dropout_prob", 0.1}, {"bos_token_id", 0},
                {"eos_token_id", 2}, {"hidden_act", "gelu"}, {"hidden_dropout_prob", 0.1}, {"hidden_size", 768},
                {"initializer_range", 0.02}, {"intermediate_size", 3072}, {"layer_norm_eps", 1e-05},
                {"max_position_embeddings", 514}, {"model_type", "roberta"}, {"num_attention_heads", 12},
                {"num_hidden_layers", 12}, {"pad_token_id", 1}, {"type_vocab_size", 1}, {"vocab_size", 50265}};
    }
    throw std::logic_error("public_config: unknown checkpoint");
}

// BERT's names back to RoBERTa's (the inverse of nn/roberta.h), its position table two rows
// longer: RoBERTa numbers real tokens from 2.
NamedTensors as_roberta(const NamedTensors& bert) {
    NamedTensors out;
    for (const NamedTensor& t : bert) {
        std::string key = t.name;
        auto swap_prefix = [&](const std::string& from, const std::string& to) {
            if (!key.starts_with(from)) return false;
            key = to + key.substr(from.size());
            return true;
        };
        swap_prefix("bert.", "roberta.") || swap_prefix("cls.predictions.transform.dense.", "lm_head.dense.") ||
            swap_prefix("cls.predictions.transform.LayerNorm.", "lm_head.layer_norm.") ||
            swap_prefix("cls.predictions.decoder.", "lm_head.decoder.") || swap_prefix("cls.predictions.bias", "lm_head.bias");
        Tensor tensor = t.tensor;
        if (key == "roberta.embeddings.position_embeddings.weight") {
            const int64_t rows = tensor.size(0), dim = tensor.size(1);
            tensor = zeros({rows + 2, dim});
            std::memcpy(tensor.f32() + 2 * dim, t.tensor.f32(), (size_t)(rows * dim) * sizeof(float));
        }
        out.push_back({key, tensor});
    }
    return out;
}

void write_json(const fs::path& path, const nlohmann::json& j) {
    std::ofstream out(path);
    out << j.dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

// A copy keeps its source's permissions, and the shared data is read-only: the old copy goes first.
void copy_afresh(const fs::path& from, const fs::path& to) {
    fs::remove(to);
    fs::copy_file(from, to);
}

void write_tokenizer(const fs::path& dir, HfCheckpoint which) {
    if (which == HfCheckpoint::RobertaBase) {
        const fs::path bpe = fs::path(QDQ_FIXTURE_DIR) / "bpe";
        copy_afresh(bpe / "vocab.json", dir / "vocab.json");
        copy_afresh(bpe / "merges.txt", dir / "merges.txt");
        return;
    }
    copy_afresh(data_path("vocab/bert-base-uncased-vocab.txt"), dir / "vocab.txt");
    write_json(dir / "tokenizer_config.json", {{"do_lower_case", true}, {"model_max_length", 512}});
}

void write_weights(const fs::path& dir, const nlohmann::json& config_json, HfCheckpoint which) {
    const std::string where = (dir / "config.json").string();
    const nn::BertConfig config = which == HfCheckpoint::RobertaBase ? nn::bert_config_from_roberta_json(config_json, where)
                                                                     : nn::bert_config_from_json(config_json, where);
    Rng init(20261129);
    const nn::BertForMaskedLM model(config, init);
    const NamedTensors weights = model.state_dict();
    save_safetensors((dir / "model.safetensors").string(), which == HfCheckpoint::RobertaBase ? as_roberta(weights) : weights,
                     {{"format", "pt"}});
}

}  // namespace

void write_hf_checkpoint(const fs::path& dir, HfCheckpoint which) {
    fs::create_directories(dir);
    const nlohmann::json config = public_config(which);
    write_json(dir / "config.json", config);
    write_weights(dir, config, which);
    write_tokenizer(dir, which);
}

void write_mismatched_hf_checkpoint(const fs::path& dir) {
    write_hf_checkpoint(dir, HfCheckpoint::BertTiny);
    nlohmann::json config = public_config(HfCheckpoint::BertTiny);
    config["hidden_size"] = 256;
    write_json(dir / "config.json", config);
}

}  // namespace qdq::testing
