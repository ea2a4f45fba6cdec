#include <algorithm>
#include <map>
#include <vector>

#include "data/unicode_tables.h"

namespace qdq::unicode {
namespace {

constexpr char32_t kCodePointCount = 0x110000;
constexpr char32_t kBlockSize = 256;  // as char_properties() in the header indexes

PropertyTable build_property_table() {
    std::vector<CharProperties> flat(kCodePointCount);
    for (size_t i = 0; i < kPropertyRangeCount; ++i) {
        const CodePointRange& r = kPropertyRanges[i];
        for (char32_t c = r.first; c <= r.last; ++c) flat[c] = {r.flags, r.combining_class};
    }
    PropertyTable table;
    table.block_of.resize(kCodePointCount / kBlockSize);
    std::map<std::vector<uint16_t>, uint16_t> seen;
    for (char32_t b = 0; b < kCodePointCount / kBlockSize; ++b) {
        std::vector<uint16_t> key(kBlockSize);
        for (char32_t i = 0; i < kBlockSize; ++i) {
            const CharProperties& p = flat[b * kBlockSize + i];
            key[i] = (uint16_t)(p.flags | p.combining_class << 8);
        }
        auto [it, inserted] = seen.try_emplace(key, (uint16_t)seen.size());
        if (inserted)
            table.blocks.insert(table.blocks.end(), flat.begin() + b * kBlockSize,
                                flat.begin() + (b + 1) * kBlockSize);
        table.block_of[b] = it->second;
    }
    return table;
}

const CodePointMapping* find_mapping(const CodePointMapping* table, size_t count, char32_t c) {
    const CodePointMapping* end = table + count;
    const CodePointMapping* it = std::lower_bound(
        table, end, c, [](const CodePointMapping& m, char32_t v) { return m.code_point < v; });
    return it != end && it->code_point == c ? it : nullptr;
}

// Hangul syllables decompose by arithmetic (Unicode §3.12) rather than through the table.
constexpr char32_t kHangulFirst = 0xAC00, kHangulLast = 0xD7A3;
constexpr char32_t kLeadBase = 0x1100, kVowelBase = 0x1161, kTrailBase = 0x11A7;
constexpr char32_t kVowelCount = 21, kTrailCount = 28;

}  // namespace

const PropertyTable& property_table() {
    static const PropertyTable table = build_property_table();
    return table;
}

int decompose(char32_t c, char32_t out[kMaxDecomposition]) {
    if (c >= kHangulFirst && c <= kHangulLast) {
        char32_t s = c - kHangulFirst;
        out[0] = kLeadBase + s / (kVowelCount * kTrailCount);
        out[1] = kVowelBase + s % (kVowelCount * kTrailCount) / kTrailCount;
        if (s % kTrailCount == 0) return 2;
        out[2] = kTrailBase + s % kTrailCount;
        return 3;
    }
    const CodePointMapping* m = find_mapping(kDecompositions, kDecompositionCount, c);
    if (!m) {
        out[0] = c;
        return 1;
    }
    std::copy_n(kDecompositionPool + m->offset, m->length, out);
    return m->length;
}

int lowercase(char32_t c, char32_t out[kMaxLowercase]) {
    const CodePointMapping* m = find_mapping(kLowercases, kLowercaseCount, c);
    if (!m) {
        out[0] = c;
        return 1;
    }
    std::copy_n(kLowercasePool + m->offset, m->length, out);
    return m->length;
}

}  // namespace qdq::unicode
