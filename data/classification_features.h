// Classification examples as model inputs: "[CLS] text_a [SEP]" for a single text, "[CLS]
// text_a [SEP] text_b [SEP]" for a pair (RoBERTa: "<s> a </s>", "<s> a </s></s> b </s>"), cut to
// max_seq_length with longest_first truncation (as Hugging Face's run_glue.py with a fast
// tokenizer). Unpadded: collate (data/loader.h) pads a batch. The offsets are dropped, as nothing
// downstream of classification needs them.
#pragma once

#include <cstdint>
#include <vector>

#include "data/examples.h"
#include "data/tokenizer.h"

namespace qdq {

// An example with an empty text_b is a single text (TextExample's convention). Throws
// std::invalid_argument for invalid UTF-8 or a max_seq_length too small for the special tokens.
Encoding classification_encoding(const Tokenizer& tokenizer, const TextExample& example,
                                 int32_t max_seq_length);

// Every example's, in example order, made on every core (data/parallel_examples.h).
std::vector<Encoding> classification_encodings(const Tokenizer& tokenizer,
                                               const std::vector<TextExample>& examples, int32_t max_seq_length);

}  // namespace qdq
