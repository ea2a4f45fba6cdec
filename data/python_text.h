// The Python 3 string operations that the SQuAD recipe leans on, on Unicode as CPython does them:
// run_qa.py strips questions with str.lstrip(), and the official v1.1 metric normalizes answers
// with str.lower(), re's \b around the articles and str.split(). ASCII-only stand-ins for these
// would score non-English answers differently (a final Σ, 'İ', an article next to 'é' or a
// combining mark, U+00A0 or U+001C between words).
//
// The letter and number classes also serve GPT-2's pre-tokenization pattern (data/byte_level.h).
//
// Character classes come from python_text_tables.cpp, measured from Python's own answers by
// gen_python_text_tables.py (Unicode 14.0 with the Python 3.11 here). Lowercase mappings come from
// data/unicode_tables.h, which holds the same full mappings (U+0130 → "i̇") plus those of letters
// added since 14.0, which Python 3.11 leaves unchanged and newer Pythons lowercase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qdq::python_text {

enum CharClass : uint8_t {
    kWord = 1,           // matched by re's \w in a str pattern: str.isalnum() or '_'
    kCased = 2,          // Unicode's Cased
    kCaseIgnorable = 4,  // Unicode's Case_Ignorable
    kSpace = 8,          // str.isspace(): White_Space plus U+001C..U+001F
    kLetter = 16,        // general category L* (str.isalpha()): regex's \p{L}
    kNumber = 32,        // general category N*: regex's \p{N}
};

extern const uint32_t kClassRuns[];
extern const size_t kClassRunCount;
extern const char kUnicodeVersion[];

uint8_t char_classes(char32_t c);
inline bool is_space(char32_t c) { return char_classes(c) & kSpace; }
inline bool is_word(char32_t c) { return char_classes(c) & kWord; }

// Throw std::invalid_argument for invalid UTF-8.
std::u32string decode(std::string_view utf8);
std::string encode(std::u32string_view text);

// str.lstrip(): text without its leading whitespace.
std::string_view lstrip(std::string_view utf8);

// str.lower(), with CPython's final-sigma rule for U+03A3.
std::u32string lower(std::u32string_view text);

}  // namespace qdq::python_text
