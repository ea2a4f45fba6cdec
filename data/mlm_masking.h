// Masked-LM inputs with the semantics of Hugging Face's DataCollatorForLanguageModeling
// (mlm=True, torch_mask_tokens): each token that is not special ([CLS], [SEP], [PAD]; RoBERTa's
// <s>, </s>, <pad>) is selected with probability mlm_probability; a selected token's label is its
// original id, every other label is -100 (cross_entropy's ignore index); of the selected tokens
// 80% become the mask token ([MASK], <mask>), 10% a token drawn uniformly from the whole
// vocabulary (specials included: HF draws from len(tokenizer)), and 10% stay as they are (BERT's
// remedy for [MASK] never occurring at fine-tuning time).
//
// The draws are ours, not torch's: per non-special token one uniform for the selection; per
// selected token one more for the 80/10/10 choice and, for a random token, one 64-bit draw.
// Special tokens draw nothing, so the result depends only on the RNG state and the token ids,
// not on how much padding follows; a saved RNG state resumes the same masks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "autograd/rng.h"
#include "data/tokenizer.h"

namespace qdq {

constexpr int32_t kIgnoreLabel = -100;

struct MlmMasking {
    float probability = 0.15f;
    int32_t mask_id = -1;
    int32_t vocab_size = 0;            // random replacements are drawn from [0, vocab_size)
    std::vector<int32_t> special_ids;  // never selected
};

// Throws std::runtime_error naming the vocab file if it has no mask token, and
// std::invalid_argument for a probability outside (0, 1).
MlmMasking mlm_masking(const Tokenizer& tokenizer, double probability);

// Masks ids in place and writes labels (one per id). Throws std::invalid_argument if the spans
// differ in length.
void mask_tokens(std::span<int32_t> ids, std::span<int32_t> labels, const MlmMasking& masking, Rng& rng);

}  // namespace qdq
