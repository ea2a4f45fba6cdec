// Classification examples as model inputs: "[CLS] text_a [SEP]" for a single text, "[CLS]
// text_a [SEP] text_b [SEP]" for a pair, cut to max_seq_length with longest_first truncation (as
// Hugging Face's run_glue.py with a fast tokenizer), with the example's label.
#pragma once

#include <cstdint>
#include <vector>

#include "data/examples.h"
#include "data/tokenizer.h"

namespace qdq {

struct ClassificationFeatureOptions {
    int32_t max_seq_length = 128;
    bool pad_to_max_length = true;
};

struct ClassificationFeature {
    std::vector<int32_t> input_ids, token_type_ids, attention_mask;
    int32_t label = -1;
};

// An example with an empty text_b is a single text (TextExample's convention). Throws
// std::invalid_argument for invalid UTF-8 or a max_seq_length too small for the special tokens.
ClassificationFeature classification_feature(const WordPieceTokenizer& tokenizer, const TextExample& example,
                                             const ClassificationFeatureOptions& options);

std::vector<ClassificationFeature> classification_features(const WordPieceTokenizer& tokenizer,
                                                           const std::vector<TextExample>& examples,
                                                           const ClassificationFeatureOptions& options);

}  // namespace qdq
