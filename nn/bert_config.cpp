#include "nn/bert_config.h"

#include <set>
#include <stdexcept>

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
    "pooler_type", "finetuning_task", "id2label", "label2id", "position_embedding_type",
    "tokenizer_class", "is_decoder", "add_cross_attention", "chunk_size_feed_forward",
    "return_dict", "output_hidden_states", "output_attentions", "torchscript", "pruned_heads",
    "tie_word_embeddings"};

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
    f.finish();
    // HF derives num_labels from id2label when it is given.
    if (j.contains("id2label") && !j.contains("num_labels")) {
        if (!j.at("id2label").is_object()) f.fail("id2label", "must be an object");
        c.num_labels = (int)j.at("id2label").size();
    }

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
