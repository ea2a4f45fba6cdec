#include "nn/roberta.h"

#include <cstring>
#include <stdexcept>

namespace qdq::nn {

namespace {

// RoBERTa's position of the first real token: padding_idx (1) + 1.
constexpr int64_t kPositionOffset = 2;

std::string replace_prefix(const std::string& s, const std::string& from, const std::string& to) {
    return to + s.substr(from.size());
}

std::string bert_key(const std::string& key) {
    if (key.starts_with("roberta.")) return replace_prefix(key, "roberta.", "bert.");
    if (key.starts_with("lm_head.dense.")) return replace_prefix(key, "lm_head.dense.", "cls.predictions.transform.dense.");
    if (key.starts_with("lm_head.layer_norm.")) return replace_prefix(key, "lm_head.layer_norm.", "cls.predictions.transform.LayerNorm.");
    if (key == "lm_head.bias") return "cls.predictions.bias";
    if (key.starts_with("lm_head.decoder.")) return "cls.predictions.decoder." + key.substr(16);
    if (key.starts_with("classifier.dense.")) return replace_prefix(key, "classifier.dense.", "bert.pooler.dense.");
    if (key.starts_with("classifier.out_proj.")) return replace_prefix(key, "classifier.out_proj.", "classifier.");
    return key;
}

}  // namespace

bool is_roberta_checkpoint(const NamedTensors& tensors) {
    for (const NamedTensor& t : tensors)
        if (t.name.starts_with("roberta.")) return true;
    return false;
}

NamedTensors roberta_to_bert(const NamedTensors& tensors) {
    NamedTensors out;
    for (const NamedTensor& t : tensors) {
        std::string key = bert_key(t.name);
        // The buffer position_ids of some exports has no parameter counterpart.
        if (key == "bert.embeddings.position_ids") continue;
        if (key == "bert.embeddings.position_embeddings.weight") {
            int64_t rows = t.tensor.size(0) - kPositionOffset, dim = t.tensor.size(1);
            if (rows <= 0) throw std::runtime_error("RoBERTa position table too small: " + shape_str(t.tensor.shape()));
            Tensor shifted = empty({rows, dim});
            std::memcpy(shifted.f32(), t.tensor.f32() + kPositionOffset * dim, (size_t)(rows * dim) * sizeof(float));
            out.push_back({key, shifted});
            continue;
        }
        out.push_back({key, t.tensor});
    }
    return out;
}

BertConfig bert_config_from_roberta_json(const nlohmann::json& j, const std::string& where) {
    nlohmann::json bert = j;
    if (bert.contains("max_position_embeddings")) {
        if (!bert.at("max_position_embeddings").is_number_integer())
            throw std::runtime_error(where + ": config field 'max_position_embeddings' must be an integer");
        bert["max_position_embeddings"] = bert.at("max_position_embeddings").get<int>() - kPositionOffset;
    }
    return bert_config_from_json(bert, where);
}

}  // namespace qdq::nn
