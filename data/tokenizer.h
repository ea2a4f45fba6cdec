// BERT's WordPiece tokenizer, matching Hugging Face tokenizers (BertNormalizer, BertPreTokenizer,
// WordPiece with "##" continuations and [UNK], TemplateProcessing "[CLS] A [SEP] (B [SEP])"),
// checked token for token by tests/test_tokenizer.cpp.
//
// Offsets: `offsets` are in code points of the original text (Python str indices), the unit of
// Hugging Face's offsets; `byte_offsets` are the same spans in UTF-8 bytes, for slicing the
// std::string. A token's span covers the original characters it came from. Special and padding
// tokens have (0, 0). For a pair, token_type_ids says which text a span refers to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/bert_normalizer.h"
#include "data/vocab.h"

namespace qdq {

struct TokenSpan {
    int32_t begin = 0, end = 0;
    bool operator==(const TokenSpan&) const = default;
};

// A special token as Hugging Face's BertTokenizerFast adds it: matched in the raw text before
// normalization, case-sensitive, wherever it occurs ("a[MASK]b" is a, [MASK], b; "[mask]" is
// ordinary text).
struct SpecialToken {
    std::string text;
    int32_t id = -1;
};

struct WordPieceTokenizer {
    Vocab vocab;
    std::vector<SpecialToken> special_tokens;  // [PAD] [UNK] [CLS] [SEP], and [MASK] when the vocab has it
    bool uncased = true;  // lowercase and strip accents (bert-base-uncased); false for cased vocabs
    int32_t max_input_chars_per_word = 100;  // words longer than this (after normalization) become [UNK]
    int32_t unk_id = -1, cls_id = -1, sep_id = -1, pad_id = -1;
};

// Throws std::runtime_error if the file is unreadable or malformed or lacks [UNK] [CLS] [SEP] [PAD].
WordPieceTokenizer load_wordpiece_tokenizer(const std::string& vocab_path, bool uncased);

// Tokens of one text, without the [CLS]/[SEP] around it; special tokens written in the text
// are kept as themselves (SpecialToken).
struct WordPieces {
    std::vector<int32_t> ids;
    std::vector<TokenSpan> offsets;       // code points
    std::vector<TokenSpan> byte_offsets;  // bytes
};

// Replaces out's contents, reusing its buffers and scratch's. Throws std::invalid_argument for
// invalid UTF-8.
void tokenize(const WordPieceTokenizer& tokenizer, std::string_view text, NormalizedText& scratch,
              WordPieces& out);

enum class Truncation {
    longest_first,  // pairs: shorten the longer text first, as tokenizers does
    only_second,    // shorten the second text only; an error if that is not enough
};

struct EncodeOptions {
    int32_t max_length = 0;  // 0: no limit; else the length including special tokens
    Truncation truncation = Truncation::longest_first;
    bool pad_to_max_length = false;  // [PAD] on the right, attention mask 0
};

struct Encoding {
    std::vector<int32_t> ids, token_type_ids, attention_mask;
    std::vector<TokenSpan> offsets;       // code points
    std::vector<TokenSpan> byte_offsets;  // bytes
};

// "[CLS] text [SEP]". Throws std::invalid_argument for invalid UTF-8 and for impossible
// truncation (only_second without a second text; max_length below the special tokens' count).
Encoding encode(const WordPieceTokenizer& tokenizer, std::string_view text, const EncodeOptions& options = {});
// "[CLS] first [SEP] second [SEP]", token type 0 up to the first [SEP], 1 after it.
Encoding encode_pair(const WordPieceTokenizer& tokenizer, std::string_view first, std::string_view second,
                     const EncodeOptions& options = {});

}  // namespace qdq
