// Character data for BERT normalization and pre-tokenization. The raw tables live in
// unicode_tables.cpp, written by gen_unicode_tables.py from Python's unicodedata with the
// corrections that make them answer as Hugging Face tokenizers does (see that script).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qdq::unicode {

enum CharFlag : uint8_t {
    kDrop = 1,               // removed by clean_text: NUL, U+FFFD, Cc/Cf/Co except \t \n \r
    kSpace = 2,              // White_Space (Rust's char::is_whitespace): becomes ' '
    kPunctuation = 4,        // ASCII punctuation or a P* category: a token of its own
    kCjk = 8,                // BERT's CJK ideograph blocks: a token of its own
    kNonspacingMark = 16,    // Mn: removed after NFD when accents are stripped
    kHasDecomposition = 32,  // has a canonical decomposition (Hangul syllables included)
    kHasLowercase = 64,      // lowercasing changes it
};

struct CodePointRange {
    char32_t first, last;
    uint8_t flags;            // CharFlag bits
    uint8_t combining_class;  // canonical combining class, for NFD's reordering
};

struct CodePointMapping {
    char32_t code_point;
    uint16_t offset;  // into the pool
    uint8_t length;
};

// Sorted, non-overlapping; code points not covered have no flags and combining class 0.
extern const CodePointRange kPropertyRanges[];
extern const size_t kPropertyRangeCount;
// Sorted by code point. Decompositions are full (recursively applied) and canonically ordered.
extern const CodePointMapping kDecompositions[];
extern const size_t kDecompositionCount;
extern const char32_t kDecompositionPool[];
extern const CodePointMapping kLowercases[];
extern const size_t kLowercaseCount;
extern const char32_t kLowercasePool[];

struct CharProperties {
    uint8_t flags = 0;
    uint8_t combining_class = 0;
};

constexpr int kMaxDecomposition = 4;  // longest canonical decomposition (Unicode 14)
constexpr int kMaxLowercase = 3;      // longest full lowercase mapping Rust can return

// kPropertyRanges as a two-level table, for O(1) lookups: many 256-code-point blocks are
// identical (most are all default), so each distinct block is stored once.
struct PropertyTable {
    std::vector<uint16_t> block_of;      // [0x110000 >> 8]: index of the code point's block
    std::vector<CharProperties> blocks;  // [distinct blocks * 256]
};

const PropertyTable& property_table();  // built on first use

inline CharProperties char_properties(const PropertyTable& table, char32_t c) {
    if (c >= 0x110000) return {};
    return table.blocks[(size_t)table.block_of[c >> 8] * 256 + (c & 0xFF)];
}

inline CharProperties char_properties(char32_t c) { return char_properties(property_table(), c); }

// Write the mapping of c into out and return its length (c itself, length 1, when unmapped).
int decompose(char32_t c, char32_t out[kMaxDecomposition]);
int lowercase(char32_t c, char32_t out[kMaxLowercase]);

}  // namespace qdq::unicode
