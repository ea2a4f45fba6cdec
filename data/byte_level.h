// GPT-2's byte-level pre-tokenization, as Hugging Face tokenizers' ByteLevel pre-tokenizer with
// add_prefix_space=false and use_regex=true (RoBERTa's):
//   1. the text is cut into pieces by GPT-2's pattern, matched leftmost-first at each position
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      Every character falls in some alternative, so the pieces cover the text. A space joins the
//      word after it; of a run of whitespace before a word, all but the last character are a piece
//      of their own ("a   b" is "a", "  ", " b"; "a\n\nb" is "a", "\n", "\n", "b").
//   2. each piece's UTF-8 bytes become printable characters by GPT-2's bytes_to_unicode, the
//      alphabet of vocab.json and merges.txt (a space is 'Ġ', U+0120; a newline 'Ċ').
// \p{L} and \p{N} are the general categories L* and N* of Unicode 14.0 (data/python_text.h); \s is
// White_Space (data/unicode_tables.h), as in the reference's regex engine (Oniguruma), which,
// unlike Python's str.isspace(), excludes U+001C..U+001F. Letters added after 14.0 count as other
// characters here, where a newer engine would call them letters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qdq {

struct ByteLevelPieces {
    std::vector<uint32_t> char_bytes;   // [characters + 1]: where each character starts, then the text's size
    std::vector<uint32_t> piece_chars;  // [pieces + 1]: each piece's first character, then the character count
    std::vector<uint8_t> kinds;         // [characters]: scratch, each character's class in the pattern
};

// Replaces out's contents (reusing its buffers). Throws std::invalid_argument for invalid UTF-8.
void split_byte_level(std::string_view text, ByteLevelPieces& out);

// GPT-2's bytes_to_unicode: the character that stands for byte b in a byte-level vocabulary,
// encoded as UTF-8 (printable bytes stand for themselves; the others move to U+0100 and up).
std::string byte_level_char(uint8_t b);

}  // namespace qdq
