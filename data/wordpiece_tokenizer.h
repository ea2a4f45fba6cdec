// BERT's WordPiece tokenizer, matching Hugging Face tokenizers (BertNormalizer, BertPreTokenizer,
// WordPiece with "##" continuations and [UNK], TemplateProcessing "[CLS] A [SEP] (B [SEP])"),
// checked token for token by tests/test_tokenizer.cpp. Offsets as data/encoding.h describes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/bert_normalizer.h"
#include "data/encoding.h"
#include "data/vocab.h"

namespace qdq {

struct WordPieceTokenizer {
    Vocab vocab;
    std::vector<SpecialToken> special_tokens;  // [PAD] [UNK] [CLS] [SEP], and [MASK] when the vocab has it
    bool uncased = true;  // lowercase and strip accents (bert-base-uncased); false for cased vocabs
    int32_t max_input_chars_per_word = 100;  // words longer than this (after normalization) become [UNK]
    int32_t unk_id = -1, cls_id = -1, sep_id = -1, pad_id = -1;
};

// Throws std::runtime_error if the file is unreadable or malformed or lacks [UNK] [CLS] [SEP] [PAD].
WordPieceTokenizer load_wordpiece_tokenizer(const std::string& vocab_path, bool uncased);

// Replaces out's contents, reusing its buffers and scratch's. Throws std::invalid_argument for
// invalid UTF-8.
void tokenize(const WordPieceTokenizer& tokenizer, std::string_view text, NormalizedText& scratch,
              WordPieces& out);

// BERT's frame: "[CLS] A [SEP]", "[CLS] A [SEP] B [SEP]" with token type 1 for B.
SpecialTemplate bert_template(const WordPieceTokenizer& tokenizer);

// "[CLS] text [SEP]". Throws std::invalid_argument for invalid UTF-8 and for impossible
// truncation (only_second without a second text; max_length below the special tokens' count).
Encoding encode(const WordPieceTokenizer& tokenizer, std::string_view text, const EncodeOptions& options = {});
// "[CLS] first [SEP] second [SEP]", token type 0 up to the first [SEP], 1 after it.
Encoding encode_pair(const WordPieceTokenizer& tokenizer, std::string_view first, std::string_view second,
                     const EncodeOptions& options = {});

}  // namespace qdq
