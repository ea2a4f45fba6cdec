#include "data/bert_normalizer.h"

#include <algorithm>
#include <stdexcept>

#include "data/unicode_tables.h"
#include "data/utf8.h"

namespace qdq {
namespace {

using unicode::char_properties;
using unicode::CharProperties;

// BertPreTokenizer: whitespace ends a word and is dropped; punctuation is a word of its own.
struct WordSplitter {
    NormalizedText& out;
    uint32_t word_first = 0;

    void close_word() {
        const uint32_t end = (uint32_t)out.chars.size();
        if (end > word_first) out.words.push_back({word_first, end});
        word_first = end;
    }

    // flags: c's CharFlag bits.
    void push(char32_t c, uint8_t flags, const SourceSpan& source) {
        if (flags & unicode::kSpace) {
            close_word();
            return;
        }
        const bool isolated = flags & unicode::kPunctuation;
        if (isolated) close_word();
        out.chars.push_back({(uint32_t)out.utf8.size(), source});
        append_utf8(out.utf8, c);
        if (isolated) close_word();
    }
};

// One character of NFD's output. first_of_source marks the first character of an original
// character's decomposition: tokenizers' transform() calls it a replacement (change 0) and the
// rest insertions (change 1).
struct DecomposedChar {
    char32_t code_point;
    uint8_t combining_class;
    bool first_of_source;
    SourceSpan source;
};

// The uncased path after NFD's decomposition: canonical ordering, then dropping nonspacing
// marks, then lowercasing. Only runs of non-starters (combining class > 0) can be reordered, so
// starters pass straight through and marks wait for the next starter.
struct AccentStripper {
    WordSplitter& words;
    const unicode::PropertyTable& table;
    std::vector<DecomposedChar> marks{};
    // tokenizers assigns alignments by position: the k-th replacement in NFD's output takes the
    // k-th original character's span and an insertion takes the span of the last replacement
    // before it. After reordering that is not always the character's own span; this is the span
    // of the last replacement already passed on.
    SourceSpan last_replaced{};

    void emit(char32_t c, const SourceSpan& source) {
        const uint8_t flags = char_properties(table, c).flags;
        if (flags & unicode::kNonspacingMark) return;
        if (!(flags & unicode::kHasLowercase)) {
            words.push(c, flags, source);
            return;
        }
        char32_t lower[unicode::kMaxLowercase];
        const int n = unicode::lowercase(c, lower);
        for (int i = 0; i < n; ++i) words.push(lower[i], char_properties(table, lower[i]).flags, source);
    }

    void flush_marks() {
        if (marks.empty()) return;
        const auto by_class = [](const DecomposedChar& a, const DecomposedChar& b) {
            return a.combining_class < b.combining_class;
        };
        SourceSpan last_in_run = last_replaced;
        for (const DecomposedChar& m : marks)
            if (m.first_of_source) last_in_run = m.source;
        if (!std::is_sorted(marks.begin(), marks.end(), by_class)) {
            std::vector<SourceSpan> replaced;
            for (const DecomposedChar& m : marks)
                if (m.first_of_source) replaced.push_back(m.source);
            std::stable_sort(marks.begin(), marks.end(), by_class);
            size_t k = 0;
            for (DecomposedChar& m : marks) {
                if (m.first_of_source) m.source = replaced[k++];
                else m.source = k == 0 ? last_replaced : replaced[k - 1];
            }
        }
        for (const DecomposedChar& m : marks) emit(m.code_point, m.source);
        marks.clear();
        last_replaced = last_in_run;
    }

    void push(const DecomposedChar& d) {
        if (d.combining_class != 0) {
            marks.push_back(d);
            return;
        }
        flush_marks();
        emit(d.code_point, d.source);
        if (d.first_of_source) last_replaced = d.source;
    }
};

}  // namespace

void normalize_and_split(std::string_view text, bool uncased, NormalizedText& out) {
    if (text.size() > UINT32_MAX) throw std::invalid_argument("text longer than 4 GiB");
    out.utf8.clear();
    out.chars.clear();
    out.words.clear();
    out.utf8.reserve(text.size());
    out.chars.reserve(text.size());

    const unicode::PropertyTable& table = unicode::property_table();
    WordSplitter words{out};
    AccentStripper stripper{words, table};
    uint32_t index = 0;
    for (size_t pos = 0; pos < text.size(); ++index) {
        const size_t begin = pos;
        const unsigned char byte = (unsigned char)text[pos];
        // Most text is ASCII: no decomposition, combining class 0, lowercase by arithmetic.
        if (byte < 0x80 && stripper.marks.empty()) {
            const SourceSpan source{(uint32_t)begin, (uint32_t)++pos, index, index + 1};
            const uint8_t flags = char_properties(table, byte).flags;
            if (flags & unicode::kDrop) continue;
            const bool lower = uncased && (flags & unicode::kHasLowercase);
            words.push(lower ? byte + ('a' - 'A') : byte, lower ? 0 : flags, source);
            if (uncased) stripper.last_replaced = source;
            continue;
        }
        char32_t c = decode_utf8(text, pos);
        const SourceSpan source{(uint32_t)begin, (uint32_t)pos, index, index + 1};
        const CharProperties properties = char_properties(table, c);
        if (properties.flags & unicode::kDrop) continue;
        if (properties.flags & unicode::kSpace) c = ' ';
        const bool cjk = properties.flags & unicode::kCjk;
        if (!uncased) {
            if (cjk) words.close_word();
            words.push(c, properties.flags, source);
            if (cjk) words.close_word();
            continue;
        }
        if (cjk) {
            stripper.flush_marks();
            words.close_word();
        }
        if (properties.flags & unicode::kHasDecomposition) {
            char32_t parts[unicode::kMaxDecomposition];
            const int n = unicode::decompose(c, parts);
            for (int i = 0; i < n; ++i)
                stripper.push({parts[i], char_properties(table, parts[i]).combining_class, i == 0, source});
        } else {
            stripper.push({c, properties.combining_class, true, source});
        }
        if (cjk) {
            stripper.flush_marks();
            words.close_word();
        }
    }
    stripper.flush_marks();
    words.close_word();
}

}  // namespace qdq
