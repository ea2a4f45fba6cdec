// What every tokenizer produces: the tokens of one text (WordPieces) and model inputs (Encoding)
// framed by special tokens the way Hugging Face tokenizers' post-processors frame them, with its
// truncation. WordPiece (data/wordpiece_tokenizer.h) and byte-level BPE (data/bpe_tokenizer.h)
// differ only in how a text becomes tokens and in the frame (SpecialTemplate).
//
// Offsets: `offsets` are in code points of the original text (Python str indices), the unit of
// Hugging Face's offsets; `byte_offsets` are the same spans in UTF-8 bytes, for slicing the
// std::string. A token's span covers the original characters it came from (the whole character
// for a byte-level token that holds part of one). Special and padding tokens have (0, 0). For a
// pair, a span refers to the text its position belongs to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qdq {

struct TokenSpan {
    int32_t begin = 0, end = 0;
    bool operator==(const TokenSpan&) const = default;
};

// A special token as Hugging Face's fast tokenizers add it: matched in the raw text before any
// normalization, case-sensitive, wherever it occurs ("a[MASK]b" is a, [MASK], b; "[mask]" is
// ordinary text). With lstrip the match also removes the whitespace before it, which then gives no
// token (RoBERTa's <mask>); the token's span is its own characters.
struct SpecialToken {
    std::string text;
    int32_t id = -1;
    bool lstrip = false;
};

// Tokens of one text, without special tokens around it; special tokens written in the text are
// kept as themselves (SpecialToken).
struct WordPieces {
    std::vector<int32_t> ids;
    std::vector<TokenSpan> offsets;       // code points
    std::vector<TokenSpan> byte_offsets;  // bytes
};

enum class Truncation {
    longest_first,  // pairs: shorten the longer text first, as tokenizers does
    only_second,    // shorten the second text only; an error if that is not enough
};

struct EncodeOptions {
    int32_t max_length = 0;  // 0: no limit; else the length including special tokens
    Truncation truncation = Truncation::longest_first;
    bool pad_to_max_length = false;  // padding on the right, attention mask 0
};

struct Encoding {
    std::vector<int32_t> ids, token_type_ids, attention_mask;
    std::vector<TokenSpan> offsets;       // code points
    std::vector<TokenSpan> byte_offsets;  // bytes
};

// How special tokens frame one text or a pair:
//   BERT (TemplateProcessing):     [CLS] A [SEP]   [CLS] A [SEP] B [SEP]       types 0… then 1…
//   RoBERTa (RobertaProcessing):   <s> A </s>      <s> A </s> </s> B </s>      types all 0
// RoBERTa has one token type (type_vocab_size 1), so its second text keeps type 0.
struct SpecialTemplate {
    int32_t cls_id = -1, sep_id = -1, pad_id = -1;
    int32_t separators_between = 1;  // sep tokens between the texts of a pair
    int32_t second_type_id = 1;      // token type of the second text and its closing sep
};

// Special tokens around one text (2) or a pair (3 for BERT, 4 for RoBERTa).
int32_t special_token_count(const SpecialTemplate& frame, bool pair);
// The position of the second text's first token when the first text has n1 tokens.
int32_t second_text_begin(const SpecialTemplate& frame, size_t n1);

// Tokens [begin, end) of one text.
struct PieceRange {
    const WordPieces* pieces = nullptr;
    size_t begin = 0, end = 0;
};

// The frame around `first` (and `second`), then padding up to `length` (attention mask 0); no
// truncation.
Encoding framed_encoding(const SpecialTemplate& frame, PieceRange first, const PieceRange* second, size_t length);

// Truncation to options.max_length as tokenizers' truncate_encodings does it (stride 0, from the
// right), then framed_encoding. Throws std::invalid_argument for impossible truncation
// (only_second without a second text or with too long a first one; max_length below the special
// tokens' count).
Encoding assemble_encoding(const SpecialTemplate& frame, const WordPieces& first, const WordPieces* second,
                           const EncodeOptions& options);

}  // namespace qdq
