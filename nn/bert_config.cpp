#include "nn/bert_config.h"

#include <set>
#include <stdexcept>
#include <vector>

#include "json/json_fields.h"
#include "json/json_file.h"

namespace qdq::nn {

namespace {

// Written by transformers into config.json without affecting the encoder's numerics here.
const std::set<std::string> kIgnoredFields = {
    "architectures", "transformers_version", "torch_dtype", "use_cache", "model_type",
    "gradient_checkpointing", "classifier_dropout", "bos_token_id", "eos_token_id",
    "sep_token_id", "problem_type", "output_past", "_name_or_path", "directionality",
    "pooler_fc_size", "pooler_num_attention_heads", "pooler_num_fc_layers", "pooler_size_per_head",
    "pooler_type", "finetuning_task", "position_embedding_type",
    "tokenizer_class", "is_decoder", "add_cross_attention", "chunk_size_feed_forward",
    "return_dict", "output_hidden_states", "output_attentions", "torchscript", "pruned_heads",
    "tie_word_embeddings", "_num_labels"};

// An id as id2label's keys spell it (HF writes str(int)): digits without a leading zero; -1 if not.
int label_id_of(const std::string& key) {
    if (key.empty() || key.size() > 9 || (key.size() > 1 && key[0] == '0')) return -1;
    for (char ch : key)
        if (ch < '0' || ch > '9') return -1;
    return std::stoi(key);
}

std::string ids_rule(size_t n) { return "ids must be 0.." + std::to_string((long)n - 1) + ", each once"; }

std::vector<std::string> names_of_id2label(const JsonFields& f, const nlohmann::json& id2label) {
    if (!id2label.is_object()) f.fail("id2label", "must be an object {\"0\": name, ...}, got " + id2label.dump());
    std::vector<std::string> names(id2label.size());
    for (const auto& [key, name] : id2label.items()) {
        const int id = label_id_of(key);
        if (id < 0 || (size_t)id >= names.size())
            f.fail("id2label", "has the key \"" + key + "\": its " + ids_rule(names.size()));
        if (!name.is_string()) f.fail("id2label", "names id " + key + " " + name.dump() + ", not a string");
        names[(size_t)id] = name.get<std::string>();
    }
    return names;  // the keys are distinct and in range, so every id is there once
}

std::vector<std::string> names_of_label2id(const JsonFields& f, const nlohmann::json& label2id) {
    if (!label2id.is_object()) f.fail("label2id", "must be an object {name: 0, ...}, got " + label2id.dump());
    std::vector<std::string> names(label2id.size());
    std::vector<bool> seen(names.size(), false);
    for (const auto& [name, id] : label2id.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t)names.size() ||
            seen[id.get<size_t>()])
            f.fail("label2id", "gives '" + name + "' the id " + id.dump() + ": its " + ids_rule(names.size()));
        seen[id.get<size_t>()] = true;
        names[id.get<size_t>()] = name;
    }
    return names;
}

// The label names of id2label or label2id (checked against each other and num_labels) into `c`.
void read_label_names(const JsonFields& f, const nlohmann::json& j, BertConfig& c) {
    const bool by_id = j.contains("id2label"), by_name = j.contains("label2id");
    if (!by_id && !by_name) return;
    const std::vector<std::string> names =
        by_id ? names_of_id2label(f, j.at("id2label")) : names_of_label2id(f, j.at("label2id"));
    const char* key = by_id ? "id2label" : "label2id";
    if (by_id && by_name && names_of_label2id(f, j.at("label2id")) != names)
        f.fail("label2id", "does not name the labels by the ids id2label gives them");
    std::set<std::string> distinct;
    for (const std::string& name : names)
        if (!distinct.insert(name).second) f.fail(key, "names two labels '" + name + "'");
    if (j.contains("num_labels") && (size_t)c.num_labels != names.size())
        f.fail(key, "names " + std::to_string(names.size()) + " labels, but num_labels is " +
                        std::to_string(c.num_labels));
    c.num_labels = (int)names.size();  // HF derives num_labels from id2label
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] != "LABEL_" + std::to_string(i)) {
            c.label_names = names;
            return;
        }
}

}  // namespace

BertConfig bert_config_from_json(const nlohmann::json& j, const std::string& source, const std::string& path) {
    JsonFields f(j, path, source);
    for (const std::string& key : kIgnoredFields) f.ignore(key.c_str());
    BertConfig c;
    f.read("vocab_size", c.vocab_size);
    f.read("hidden_size", c.hidden_size);
    f.read("num_hidden_layers", c.num_hidden_layers);
    f.read("num_attention_heads", c.num_attention_heads);
    f.read("intermediate_size", c.intermediate_size);
    f.read("hidden_act", c.hidden_act);
    f.read("hidden_dropout_prob", c.hidden_dropout_prob);
    f.read("attention_probs_dropout_prob", c.attention_probs_dropout_prob);
    f.read("max_position_embeddings", c.max_position_embeddings);
    f.read("type_vocab_size", c.type_vocab_size);
    f.read("layer_norm_eps", c.layer_norm_eps);
    f.read("initializer_range", c.initializer_range);
    f.read("num_labels", c.num_labels);
    f.read("pad_token_id", c.pad_token_id);
    f.ignore("id2label");
    f.ignore("label2id");
    f.finish();
    read_label_names(f, j, c);

    if (c.hidden_act != "gelu") f.fail("hidden_act", "is '" + c.hidden_act + "'; only \"gelu\" (erf form) is supported");
    // Compared as a string: GCC 12 warns (-Warray-bounds, falsely) on json's own == with a literal.
    if (j.contains("position_embedding_type")) {
        const nlohmann::json& type = j.at("position_embedding_type");
        if (!type.is_string() || type.get_ref<const std::string&>() != "absolute")
            f.fail("position_embedding_type", "must be \"absolute\"");
    }
    for (auto [key, v] : {std::pair{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
                          {"num_hidden_layers", c.num_hidden_layers},
                          {"num_attention_heads", c.num_attention_heads},
                          {"intermediate_size", c.intermediate_size},
                          {"max_position_embeddings", c.max_position_embeddings},
                          {"type_vocab_size", c.type_vocab_size}, {"num_labels", c.num_labels}})
        if (v <= 0) f.fail(key, "must be positive, got " + std::to_string(v));
    if (c.hidden_size % c.num_attention_heads != 0)
        f.fail("hidden_size", "(" + std::to_string(c.hidden_size) + ") must be a multiple of num_attention_heads (" +
                                  std::to_string(c.num_attention_heads) + ")");
    for (auto [key, p] : {std::pair{"hidden_dropout_prob", c.hidden_dropout_prob},
                          {"attention_probs_dropout_prob", c.attention_probs_dropout_prob}})
        if (p < 0 || p >= 1) f.fail(key, "must be in [0, 1)");
    if (c.layer_norm_eps <= 0) f.fail("layer_norm_eps", "must be positive");
    // The word embeddings' padding_idx, as torch.nn.Embedding requires it.
    if (c.pad_token_id < 0 || c.pad_token_id >= c.vocab_size)
        f.fail("pad_token_id", "must be a row of the vocabulary, in [0, " + std::to_string(c.vocab_size) + "), got " +
                                   std::to_string(c.pad_token_id));
    return c;
}

BertConfig load_bert_config(const std::string& path) { return bert_config_from_json(read_json_file(path), path); }

nlohmann::json bert_config_to_json(const BertConfig& c) {
    nlohmann::json j = {{"model_type", "bert"},
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
    if (c.label_names.empty()) return j;
    if (c.label_names.size() != (size_t)c.num_labels)
        throw std::invalid_argument("bert_config_to_json: " + std::to_string(c.label_names.size()) +
                                    " label names for num_labels " + std::to_string(c.num_labels));
    j["id2label"] = nlohmann::json::object();
    j["label2id"] = nlohmann::json::object();
    for (size_t id = 0; id < c.label_names.size(); ++id) {
        j["id2label"][std::to_string(id)] = c.label_names[id];
        j["label2id"][c.label_names[id]] = id;
    }
    return j;
}

}  // namespace qdq::nn
