// UTF-8 decoding that rejects malformed input (overlong forms, surrogates, values past
// U+10FFFF, truncated sequences) with the byte offset of the problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qdq {

[[noreturn]] void throw_invalid_utf8(std::string_view text, size_t pos, const char* problem);

// The code point that starts at text[pos]; pos moves past it.
inline char32_t decode_utf8(std::string_view text, size_t& pos) {
    const auto byte = [&](size_t i) { return (unsigned char)text[i]; };
    unsigned char b0 = byte(pos);
    if (b0 < 0x80) {
        ++pos;
        return b0;
    }
    int length;
    char32_t c, min;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2, c = b0 & 0x1F, min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3, c = b0 & 0x0F, min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4, c = b0 & 0x07, min = 0x10000;
    } else {
        throw_invalid_utf8(text, pos, b0 >= 0x80 && b0 <= 0xBF ? "unexpected continuation byte"
                                                                : "byte that never appears in UTF-8");
    }
    if (pos + length > text.size()) throw_invalid_utf8(text, pos, "sequence cut off by the end of the text");
    for (int i = 1; i < length; ++i) {
        unsigned char b = byte(pos + i);
        if ((b & 0xC0) != 0x80) throw_invalid_utf8(text, pos, "sequence cut off by a non-continuation byte");
        c = c << 6 | (b & 0x3F);
    }
    if (c < min) throw_invalid_utf8(text, pos, "overlong encoding");
    if (c >= 0xD800 && c <= 0xDFFF) throw_invalid_utf8(text, pos, "encoded UTF-16 surrogate");
    if (c > 0x10FFFF) throw_invalid_utf8(text, pos, "code point above U+10FFFF");
    pos += length;
    return c;
}

// The code points of valid UTF-8: its bytes that are not continuation bytes.
inline uint32_t code_points(std::string_view utf8) {
    uint32_t count = 0;
    for (char c : utf8) count += ((unsigned char)c & 0xC0) != 0x80;
    return count;
}

inline void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out.push_back((char)c);
    } else if (c < 0x800) {
        out.push_back((char)(0xC0 | c >> 6));
        out.push_back((char)(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        out.push_back((char)(0xE0 | c >> 12));
        out.push_back((char)(0x80 | (c >> 6 & 0x3F)));
        out.push_back((char)(0x80 | (c & 0x3F)));
    } else {
        out.push_back((char)(0xF0 | c >> 18));
        out.push_back((char)(0x80 | (c >> 12 & 0x3F)));
        out.push_back((char)(0x80 | (c >> 6 & 0x3F)));
        out.push_back((char)(0x80 | (c & 0x3F)));
    }
}

}  // namespace qdq
