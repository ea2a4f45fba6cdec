#include "data/mlm_masking.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace qdq {
namespace {

// Lemire's multiply-shift: floor(r * range / 2^64). Its bias, at most range / 2^64 (~2e-15 for
// BERT's vocabulary), is far below what any statistic of a training run could see.
int32_t uniform_below(Rng& rng, int32_t range) {
    return (int32_t)(((unsigned __int128)rng.next_u64() * (uint64_t)range) >> 64);
}

}  // namespace

MlmMasking mlm_masking(const Tokenizer& tokenizer, double probability) {
    if (!(probability > 0 && probability < 1))
        throw std::invalid_argument("mlm_probability must be in (0, 1), got " + std::to_string(probability));
    MlmMasking masking;
    masking.probability = (float)probability;
    masking.mask_id = tokenizer.mask_id;
    if (masking.mask_id < 0)
        throw std::runtime_error("vocab file " + tokenizer.vocab_path + " lacks " + tokenizer.mask_token +
                                 ", which masked-LM needs");
    masking.vocab_size = vocab_size(tokenizer);
    masking.special_ids = {tokenizer.special.cls_id, tokenizer.special.sep_id, tokenizer.special.pad_id};
    return masking;
}

void mask_tokens(std::span<int32_t> ids, std::span<int32_t> labels, const MlmMasking& masking, Rng& rng) {
    if (ids.size() != labels.size())
        throw std::invalid_argument("mask_tokens: " + std::to_string(ids.size()) + " ids but " +
                                    std::to_string(labels.size()) + " labels");
    const auto& special = masking.special_ids;
    for (size_t i = 0; i < ids.size(); ++i) {
        labels[i] = kIgnoreLabel;
        if (std::find(special.begin(), special.end(), ids[i]) != special.end()) continue;
        if (rng.uniform() >= masking.probability) continue;
        labels[i] = ids[i];
        const float choice = rng.uniform();
        if (choice < 0.8f) {
            ids[i] = masking.mask_id;
        } else if (choice < 0.9f) {
            ids[i] = uniform_below(rng, masking.vocab_size);
        }
    }
}

}  // namespace qdq
