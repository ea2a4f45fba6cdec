// BERT's text normalization and pre-tokenization, as Hugging Face tokenizers' BertNormalizer
// (clean_text, handle_chinese_chars, strip_accents = lowercase) followed by BertPreTokenizer:
//   1. drop NUL, U+FFFD and control/format/private-use characters; whitespace becomes ' ';
//   2. CJK ideographs become words of their own;
//   3. uncased only: NFD, drop nonspacing marks (accents), then lowercase;
//   4. split on whitespace; every punctuation character is a word of its own.
// Every normalized character remembers which original character it came from, with the rules
// of tokenizers' NormalizedString, so that token offsets agree with the reference.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qdq {

// The span of original text that a normalized character came from, in UTF-8 bytes and in code points.
struct SourceSpan {
    uint32_t byte_begin = 0, byte_end = 0;
    uint32_t char_begin = 0, char_end = 0;
};

struct NormalizedChar {
    uint32_t utf8_offset;  // where its bytes start in NormalizedText::utf8
    SourceSpan source;
};

// A pre-token: chars [first, end) of NormalizedText::chars.
struct WordSpan {
    uint32_t first, end;
};

struct NormalizedText {
    std::string utf8;                   // the normalized characters of all words, back to back
    std::vector<NormalizedChar> chars;  // the characters of all words (whitespace is gone)
    std::vector<WordSpan> words;
};

// Replaces out's contents (reusing its buffers). Throws std::invalid_argument for invalid UTF-8.
void normalize_and_split(std::string_view text, bool uncased, NormalizedText& out);

// The bytes of chars [first, end) in text.utf8.
inline std::string_view normalized_bytes(const NormalizedText& text, uint32_t first, uint32_t end) {
    const uint32_t begin = text.chars[first].utf8_offset;
    const uint32_t stop = end < text.chars.size() ? text.chars[end].utf8_offset : (uint32_t)text.utf8.size();
    return std::string_view(text.utf8).substr(begin, stop - begin);
}

}  // namespace qdq
