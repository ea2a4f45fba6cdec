#include "data/byte_level.h"

#include <array>

#include "data/python_text.h"
#include "data/unicode_tables.h"
#include "data/utf8.h"

namespace qdq {
namespace {

enum Kind : uint8_t { kLetter, kNumber, kSpace, kOther };

Kind kind_of(char32_t c) {
    if (c < 0x80) {
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return kLetter;
        if (c >= '0' && c <= '9') return kNumber;
        return c == ' ' || (c >= '\t' && c <= '\r') ? kSpace : kOther;
    }
    if (unicode::char_properties(c).flags & unicode::kSpace) return kSpace;
    const uint8_t classes = python_text::char_classes(c);
    if (classes & python_text::kLetter) return kLetter;
    if (classes & python_text::kNumber) return kNumber;
    return kOther;
}

// 's 't 're 've 'm 'll 'd at `at` (an apostrophe): the contraction's length, or 0.
size_t contraction_length(std::string_view text, size_t at) {
    const std::string_view rest = text.substr(at + 1);
    if (rest.empty()) return 0;
    const char c = rest[0];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
    if (rest.starts_with("re") || rest.starts_with("ve") || rest.starts_with("ll")) return 3;
    return 0;
}

// The end (a character index) of the pattern's match at character i, which always exists: the
// alternatives are tried in the pattern's order, as a backtracking engine does.
size_t match_end(std::string_view text, const ByteLevelPieces& p, size_t i) {
    const size_t n = p.kinds.size();
    const uint32_t byte = p.char_bytes[i];
    if (text[byte] == '\'')
        if (const size_t length = contraction_length(text, byte)) return i + length;  // ASCII: bytes = chars
    // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": a space is taken only with a run after it.
    const size_t run_begin = text[byte] == ' ' && i + 1 < n && p.kinds[i + 1] != kSpace ? i + 1 : i;
    if (p.kinds[run_begin] != kSpace) {
        size_t end = run_begin + 1;
        while (end < n && p.kinds[end] == p.kinds[run_begin]) ++end;
        return end;
    }
    // "\s+(?!\S)": the whitespace run, less its last character when a non-space follows; when
    // that leaves nothing, "\s+" takes the one character.
    size_t end = i + 1;
    while (end < n && p.kinds[end] == kSpace) ++end;
    return end < n && end - i >= 2 ? end - 1 : end;
}

std::array<char32_t, 256> bytes_to_unicode() {
    std::array<char32_t, 256> map{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        map[b] = printable ? (char32_t)b : next++;
    }
    return map;
}

}  // namespace

void split_byte_level(std::string_view text, ByteLevelPieces& out) {
    out.char_bytes.clear();
    out.kinds.clear();
    out.piece_chars.clear();
    for (size_t pos = 0; pos < text.size();) {
        out.char_bytes.push_back((uint32_t)pos);
        out.kinds.push_back(kind_of(decode_utf8(text, pos)));
    }
    out.char_bytes.push_back((uint32_t)text.size());
    const size_t n = out.kinds.size();
    for (size_t i = 0; i < n; i = match_end(text, out, i)) out.piece_chars.push_back((uint32_t)i);
    out.piece_chars.push_back((uint32_t)n);
}

std::string byte_level_char(uint8_t b) {
    static const std::array<char32_t, 256> map = bytes_to_unicode();
    std::string out;
    append_utf8(out, map[b]);
    return out;
}

}  // namespace qdq
