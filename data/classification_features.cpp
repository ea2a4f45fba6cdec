#include "data/classification_features.h"

#include "data/parallel_examples.h"

namespace qdq {

Encoding classification_encoding(const Tokenizer& tokenizer, const TextExample& example,
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

std::vector<Encoding> classification_encodings(const Tokenizer& tokenizer,
                                               const std::vector<TextExample>& examples, int32_t max_seq_length) {
    return features_in_parallel<Encoding>((int64_t)examples.size(), [&](int64_t i, std::vector<Encoding>& out) {
        out.push_back(classification_encoding(tokenizer, examples[(size_t)i], max_seq_length));
    });
}

}  // namespace qdq
