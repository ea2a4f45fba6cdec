#include "data/python_text.h"

#include <algorithm>

#include "data/unicode_tables.h"
#include "data/utf8.h"

namespace qdq::python_text {
namespace {

constexpr char32_t kCapitalSigma = 0x3A3, kSmallSigma = 0x3C3, kFinalSigma = 0x3C2;
constexpr int kClassBits = 6;  // kClassRuns holds (first code point << 6) | classes
constexpr uint32_t kClassMask = (1u << kClassBits) - 1;

// CPython's handle_capital_sigma: a capital sigma at i is final when a cased character precedes
// it and none follows it, case-ignorable characters being skipped in both directions.
bool is_final_sigma(std::u32string_view text, size_t i) {
    size_t j = i;
    while (j > 0 && char_classes(text[j - 1]) & kCaseIgnorable) --j;
    if (j == 0 || !(char_classes(text[j - 1]) & kCased)) return false;
    size_t k = i + 1;
    while (k < text.size() && char_classes(text[k]) & kCaseIgnorable) ++k;
    return k == text.size() || !(char_classes(text[k]) & kCased);
}

}  // namespace

uint8_t char_classes(char32_t c) {
    // The runs start at U+0000 and cover every code point; find the last run starting at or before c.
    const uint32_t key = (uint32_t)c << kClassBits | kClassMask;
    const uint32_t* run = std::upper_bound(kClassRuns, kClassRuns + kClassRunCount, key) - 1;
    return (uint8_t)(*run & kClassMask);
}

std::u32string decode(std::string_view utf8) {
    std::u32string out;
    out.reserve(utf8.size());
    for (size_t pos = 0; pos < utf8.size();) out.push_back(decode_utf8(utf8, pos));
    return out;
}

std::string encode(std::u32string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t c : text) append_utf8(out, c);
    return out;
}

std::string_view lstrip(std::string_view utf8) {
    size_t pos = 0;
    while (pos < utf8.size()) {
        size_t next = pos;
        if (!is_space(decode_utf8(utf8, next))) break;
        pos = next;
    }
    return utf8.substr(pos);
}

std::u32string lower(std::u32string_view text) {
    std::u32string out;
    out.reserve(text.size());
    char32_t mapped[unicode::kMaxLowercase];
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == kCapitalSigma) {
            out.push_back(is_final_sigma(text, i) ? kFinalSigma : kSmallSigma);
            continue;
        }
        const int n = unicode::lowercase(text[i], mapped);
        out.append(mapped, mapped + n);
    }
    return out;
}

}  // namespace qdq::python_text
