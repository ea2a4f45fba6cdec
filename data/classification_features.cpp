#include "data/classification_features.h"

namespace qdq {

Encoding classification_encoding(const WordPieceTokenizer& tokenizer, const TextExample& example,
                                 int32_t max_seq_length) {
    EncodeOptions options;
    options.max_length = max_seq_length;
    options.truncation = Truncation::longest_first;
    Encoding e = example.text_b.empty() ? encode(tokenizer, example.text_a, options)
                                        : encode_pair(tokenizer, example.text_a, example.text_b, options);
    e.offsets = {};
    e.byte_offsets = {};
    return e;
}

std::vector<Encoding> classification_encodings(const WordPieceTokenizer& tokenizer,
                                               const std::vector<TextExample>& examples, int32_t max_seq_length) {
    std::vector<Encoding> out;
    out.reserve(examples.size());
    for (const TextExample& example : examples) out.push_back(classification_encoding(tokenizer, example, max_seq_length));
    return out;
}

}  // namespace qdq
