#include "nn/bert_config.h"

#include <fstream>
#include <set>
#include <stdexcept>

namespace qdq::nn {

namespace {

// Written by transformers into config.json without affecting the encoder's numerics here.
const std::set<std::string> kIgnoredFields = {
    "architectures", "transformers_version", "torch_dtype", "use_cache", "model_type",
    "gradient_checkpointing", "classifier_dropout", "bos_token_id", "eos_token_id",
    "sep_token_id", "problem_type", "output_past", "_name_or_path", "directionality",
    "pooler_fc_size", "pooler_num_attention_heads", "pooler_num_fc_layers", "pooler_size_per_head",
    "pooler_type", "finetuning_task", "id2label", "label2id", "position_embedding_type",
    "tokenizer_class", "is_decoder", "add_cross_attention", "chunk_size_feed_forward",
    "return_dict", "output_hidden_states", "output_attentions", "torchscript", "pruned_heads",
    "tie_word_embeddings"};

[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& what) {
    throw std::runtime_error(where + ": config field '" + key + "' " + what);
}

template <typename T>
void read_field(const nlohmann::json& j, const std::string& where, const char* key, T& out) {
    if (!j.contains(key)) return;
    const nlohmann::json& v = j.at(key);
    if constexpr (std::is_same_v<T, int>) {
        if (!v.is_number_integer()) fail(where, key, "must be an integer, got " + v.dump());
    } else if constexpr (std::is_same_v<T, float>) {
        if (!v.is_number()) fail(where, key, "must be a number, got " + v.dump());
    } else {
        if (!v.is_string()) fail(where, key, "must be a string, got " + v.dump());
    }
    out = v.get<T>();
}

}  // namespace

BertConfig bert_config_from_json(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object()) throw std::runtime_error(where + ": a config must be a JSON object");
    BertConfig c;
    const std::set<std::string> known = {
        "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
        "intermediate_size", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
        "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "initializer_range",
        "num_labels", "pad_token_id"};
    for (const auto& [key, value] : j.items())
        if (!known.count(key) && !kIgnoredFields.count(key)) fail(where, key, "is not a BERT config field");

    read_field(j, where, "vocab_size", c.vocab_size);
    read_field(j, where, "hidden_size", c.hidden_size);
    read_field(j, where, "num_hidden_layers", c.num_hidden_layers);
    read_field(j, where, "num_attention_heads", c.num_attention_heads);
    read_field(j, where, "intermediate_size", c.intermediate_size);
    read_field(j, where, "hidden_act", c.hidden_act);
    read_field(j, where, "hidden_dropout_prob", c.hidden_dropout_prob);
    read_field(j, where, "attention_probs_dropout_prob", c.attention_probs_dropout_prob);
    read_field(j, where, "max_position_embeddings", c.max_position_embeddings);
    read_field(j, where, "type_vocab_size", c.type_vocab_size);
    read_field(j, where, "layer_norm_eps", c.layer_norm_eps);
    read_field(j, where, "initializer_range", c.initializer_range);
    read_field(j, where, "num_labels", c.num_labels);
    read_field(j, where, "pad_token_id", c.pad_token_id);
    // HF derives num_labels from id2label when it is given.
    if (j.contains("id2label") && !j.contains("num_labels")) {
        if (!j.at("id2label").is_object()) fail(where, "id2label", "must be an object");
        c.num_labels = (int)j.at("id2label").size();
    }

    if (c.hidden_act != "gelu")
        fail(where, "hidden_act", "is '" + c.hidden_act + "'; only \"gelu\" (erf form) is supported");
    if (j.contains("position_embedding_type") && j.at("position_embedding_type") != "absolute")
        fail(where, "position_embedding_type", "must be \"absolute\"");
    for (auto [key, v] : {std::pair{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
                          {"num_hidden_layers", c.num_hidden_layers},
                          {"num_attention_heads", c.num_attention_heads},
                          {"intermediate_size", c.intermediate_size},
                          {"max_position_embeddings", c.max_position_embeddings},
                          {"type_vocab_size", c.type_vocab_size}, {"num_labels", c.num_labels}})
        if (v <= 0) fail(where, key, "must be positive, got " + std::to_string(v));
    if (c.hidden_size % c.num_attention_heads != 0)
        fail(where, "hidden_size", "(" + std::to_string(c.hidden_size) +
                                       ") must be a multiple of num_attention_heads (" +
                                       std::to_string(c.num_attention_heads) + ")");
    for (auto [key, p] : {std::pair{"hidden_dropout_prob", c.hidden_dropout_prob},
                          {"attention_probs_dropout_prob", c.attention_probs_dropout_prob}})
        if (p < 0 || p >= 1) fail(where, key, "must be in [0, 1)");
    if (c.layer_norm_eps <= 0) fail(where, "layer_norm_eps", "must be positive");
    return c;
}

BertConfig load_bert_config(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open config " + path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw std::runtime_error(path + ": not valid JSON: " + e.what());
    }
    return bert_config_from_json(j, path);
}

nlohmann::json bert_config_to_json(const BertConfig& c) {
    return {{"model_type", "bert"},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"intermediate_size", c.intermediate_size},
            {"hidden_act", c.hidden_act},
            {"hidden_dropout_prob", c.hidden_dropout_prob},
            {"attention_probs_dropout_prob", c.attention_probs_dropout_prob},
            {"max_position_embeddings", c.max_position_embeddings},
            {"type_vocab_size", c.type_vocab_size},
            {"layer_norm_eps", c.layer_norm_eps},
            {"initializer_range", c.initializer_range},
            {"num_labels", c.num_labels},
            {"pad_token_id", c.pad_token_id}};
}

}  // namespace qdq::nn
