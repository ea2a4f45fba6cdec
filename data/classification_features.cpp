#include "data/classification_features.h"

namespace qdq {

ClassificationFeature classification_feature(const WordPieceTokenizer& tokenizer, const TextExample& example,
                                             const ClassificationFeatureOptions& options) {
    EncodeOptions encode_options;
    encode_options.max_length = options.max_seq_length;
    encode_options.truncation = Truncation::longest_first;
    encode_options.pad_to_max_length = options.pad_to_max_length;
    Encoding e = example.text_b.empty() ? encode(tokenizer, example.text_a, encode_options)
                                        : encode_pair(tokenizer, example.text_a, example.text_b, encode_options);
    return {std::move(e.ids), std::move(e.token_type_ids), std::move(e.attention_mask), example.label};
}

std::vector<ClassificationFeature> classification_features(const WordPieceTokenizer& tokenizer,
                                                           const std::vector<TextExample>& examples,
                                                           const ClassificationFeatureOptions& options) {
    std::vector<ClassificationFeature> out;
    out.reserve(examples.size());
    for (const TextExample& example : examples) out.push_back(classification_feature(tokenizer, example, options));
    return out;
}

}  // namespace qdq
