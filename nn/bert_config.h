// BertConfig: the fields of a Hugging Face BERT config.json, with HF's defaults
// (bert-base-uncased sizes). Parsing rejects unknown fields and wrong types by name; fields
// that HF writes but that do not change the model (architectures, transformers_version, ...)
// are accepted and ignored.
//
// A classification model's labels: id2label ({"0": "name", ...}, HF's format, the keys strings)
// or label2id ({"name": 0, ...}) name its classes by id, as a fine-tuned checkpoint's config.json
// does (roberta-large-mnli: CONTRADICTION 0, NEUTRAL 1, ENTAILMENT 2). The ids must be 0..n-1,
// each once, the names distinct, n equal to num_labels when that is given too (else num_labels is
// n, as HF derives it), and the two maps must agree when both are given. HF's default names
// LABEL_0..LABEL_<n-1> name nothing. The classification task orders its examples' labels by
// these names (trainers/classification_labels.h), and bert_config_to_json writes both maps when
// there are names, so that HF shows them instead of LABEL_0.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdq::nn {

struct BertConfig {
    int vocab_size = 30522;
    int hidden_size = 768;
    int num_hidden_layers = 12;
    int num_attention_heads = 12;
    int intermediate_size = 3072;
    std::string hidden_act = "gelu";
    float hidden_dropout_prob = 0.1f;
    float attention_probs_dropout_prob = 0.1f;
    int max_position_embeddings = 512;
    int type_vocab_size = 2;
    float layer_norm_eps = 1e-12f;
    float initializer_range = 0.02f;
    int num_labels = 2;
    int pad_token_id = 0;
    // By class id, num_labels of them; empty when the config names no labels.
    std::vector<std::string> label_names{};

    int head_dim() const { return hidden_size / num_attention_heads; }
};

// Errors name `source` (a file) and the key under `path`, the object's dotted place in that
// file ("model.config"; empty for a config.json of its own).
BertConfig bert_config_from_json(const nlohmann::json& j, const std::string& source, const std::string& path = "");
BertConfig load_bert_config(const std::string& path);  // a config.json file
nlohmann::json bert_config_to_json(const BertConfig& config);

}  // namespace qdq::nn
