#include "data/bpe_tokenizer.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <queue>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "data/unicode_tables.h"
#include "data/utf8.h"

namespace qdq {
namespace {

constexpr std::string_view kSpaceChar = "\xC4\xA0";  // 'Ġ', the byte-level character of a space
constexpr size_t kCacheCapacity = 1 << 18;         // words (IMDB's test reviews have 115k); ~30 MB
constexpr size_t kLongestCachedWord = 256;         // bytes; longer pieces rarely repeat

std::string read_file(const std::string& path, const char* what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(std::string("cannot open ") + what + " " + path);
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t)(uint32_t)left << 32 | (uint32_t)right; }

// vocab.json: {"token": id, ...} with the ids 0..N-1. Returns token -> id; fills tokenizer.tokens.
std::unordered_map<std::string, int32_t> read_vocab_json(BpeTokenizer& t) {
    const nlohmann::json j = nlohmann::json::parse(read_file(t.vocab_path, "vocab file"), nullptr, false);
    if (!j.is_object() || j.empty())
        throw std::runtime_error("vocab file " + t.vocab_path + " is not a JSON object of token ids");
    t.tokens.assign(j.size(), "");
    std::unordered_map<std::string, int32_t> ids;
    for (const auto& [token, id] : j.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= (int64_t)j.size())
            throw std::runtime_error("vocab file " + t.vocab_path + ": the id of '" + token + "' is not in 0.." +
                                     std::to_string(j.size() - 1));
        const auto i = (size_t)id.get<int64_t>();
        if (!t.tokens[i].empty())
            throw std::runtime_error("vocab file " + t.vocab_path + ": id " + std::to_string(i) + " is both '" +
                                     t.tokens[i] + "' and '" + token + "'");
        t.tokens[i] = token;
        ids.emplace(token, (int32_t)i);
    }
    return ids;
}

// merges.txt: "left right" per line, lowest rank first, after an optional "#version" line. A pair
// listed twice keeps its last rank, as tokenizers' and GPT-2's loaders do.
void read_merges(BpeTokenizer& t, const std::unordered_map<std::string, int32_t>& ids) {
    const std::string text = read_file(t.merges_path, "merges file");
    const auto id_of = [&](const std::string& token, size_t line) {
        const auto it = ids.find(token);
        if (it == ids.end())
            throw std::runtime_error(t.merges_path + ":" + std::to_string(line) + ": '" + token + "' is not in " +
                                     t.vocab_path);
        return it->second;
    };
    int32_t rank = 0;
    size_t line_number = 0;
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_number;
        if (line.ends_with('\r')) line.pop_back();
        if (line.starts_with("#version")) continue;
        const size_t space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
            line.find(' ', space + 1) != std::string::npos)
            throw std::runtime_error(t.merges_path + ":" + std::to_string(line_number) +
                                     ": not two tokens separated by one space");
        const std::string left = line.substr(0, space), right = line.substr(space + 1);
        t.merges.insert_or_assign(pair_key(id_of(left, line_number), id_of(right, line_number)),
                                  BpeMerge{rank++, id_of(left + right, line_number)});
    }
}

struct BpeSpecialMatch {
    size_t stretch_end;         // where the text before it ends: less the whitespace an lstrip token takes
    size_t begin, end;          // the token's own bytes; the text's size when none is left
    const SpecialToken* token;  // null when none is left
};

// Where the whitespace that ends text[from, at) begins (White_Space, Rust's char::is_whitespace).
size_t trailing_whitespace(std::string_view text, size_t from, size_t at) {
    size_t run = from;
    for (size_t pos = from; pos < at;)
        if (!(unicode::char_properties(decode_utf8(text, pos)).flags & unicode::kSpace)) run = pos;
    return run;
}

// The leftmost special token at or after `from`, the longest one where two start together.
BpeSpecialMatch find_special(const BpeTokenizer& t, std::string_view text, size_t from) {
    std::string first_bytes;  // "<" for RoBERTa's
    for (const SpecialToken& special : t.special_tokens)
        if (first_bytes.find(special.text[0]) == std::string::npos) first_bytes += special.text[0];
    for (size_t at = text.find_first_of(first_bytes, from); at != std::string_view::npos;
         at = text.find_first_of(first_bytes, at + 1)) {
        const SpecialToken* best = nullptr;
        for (const SpecialToken& special : t.special_tokens)
            if (text.substr(at).starts_with(special.text) && (!best || special.text.size() > best->text.size()))
                best = &special;
        if (best) return {best->lstrip ? trailing_whitespace(text, from, at) : at, at, at + best->text.size(), best};
    }
    return {text.size(), text.size(), text.size(), nullptr};
}

// A candidate merge of the symbols at left and right; stale once either has changed.
struct Candidate {
    int32_t rank;
    uint32_t left, right;
    int32_t left_id, right_id, merged_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

struct Symbol {
    int32_t id;          // -1 once merged into the symbol on its left
    uint32_t end;        // where its bytes end in the word
    int32_t prev, next;  // neighbours, -1 at the ends
};

// BPE of one word (its bytes), lowest rank first and leftmost among equals, as tokenizers'
// Word::merge_all: a priority queue of candidate pairs, so a long word costs O(n log n).
void merge_word(const BpeTokenizer& t, std::string_view word, std::vector<BpeToken>& out) {
    std::vector<Symbol> symbols(word.size());
    for (size_t i = 0; i < word.size(); ++i)
        symbols[i] = {t.byte_ids[(uint8_t)word[i]], (uint32_t)i + 1, (int32_t)i - 1,
                      i + 1 < word.size() ? (int32_t)i + 1 : -1};
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto propose = [&](int32_t left) {
        if (left < 0 || symbols[left].next < 0) return;
        const Symbol &l = symbols[left], &r = symbols[l.next];
        const auto it = t.merges.find(pair_key(l.id, r.id));
        if (it != t.merges.end())
            queue.push({it->second.rank, (uint32_t)left, (uint32_t)l.next, l.id, r.id, it->second.merged_id});
    };
    for (size_t i = 0; i + 1 < word.size(); ++i) propose((int32_t)i);
    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& l = symbols[c.left];
        if (l.id != c.left_id || l.next != (int32_t)c.right || symbols[c.right].id != c.right_id) continue;
        Symbol& r = symbols[c.right];
        l.id = c.merged_id;
        l.end = r.end;
        l.next = r.next;
        if (r.next >= 0) symbols[r.next].prev = (int32_t)c.left;
        r.id = -1;
        propose(l.prev);
        propose((int32_t)c.left);
    }
    out.clear();
    for (int32_t i = word.empty() ? -1 : 0; i >= 0; i = symbols[i].next) out.push_back({symbols[i].id, symbols[i].end});
}

const std::vector<BpeToken>& word_tokens(const BpeTokenizer& t, std::string_view word, BpeScratch& s) {
    if (word.size() > kLongestCachedWord) {
        merge_word(t, word, s.word);
        return s.word;
    }
    if (const auto it = s.cache.find(word); it != s.cache.end()) return it->second;
    if (s.cache.size() >= kCacheCapacity) s.cache.clear();
    merge_word(t, word, s.word);
    return s.cache.emplace(std::string(word), s.word).first->second;
}

size_t leading_spaces(std::string_view token) {
    size_t n = 0;
    for (; token.substr(n * kSpaceChar.size()).starts_with(kSpaceChar); ++n) {}
    return n;
}

size_t trailing_spaces(std::string_view token) {
    size_t n = 0;
    for (; token.substr(0, token.size() - n * kSpaceChar.size()).ends_with(kSpaceChar); ++n) {}
    return n;
}

// ByteLevel's process_offsets (trim_offsets) on one span; a space is one byte and one code point.
TokenSpan trimmed(TokenSpan span, size_t leading, size_t trailing) {
    if (leading > 0) span.begin = std::min(span.begin + (int32_t)leading, span.end);
    if (trailing > 0 && span.end >= (int32_t)trailing) span.end = std::max(span.end - (int32_t)trailing, span.begin);
    return span;
}

// Where a stretch of text starts in the whole text.
struct TextPosition {
    uint32_t byte = 0, char_index = 0;
};

// The tokens of text between special tokens.
void tokenize_stretch(const BpeTokenizer& t, std::string_view text, TextPosition base, BpeScratch& s,
                      WordPieces& out) {
    ByteLevelPieces& p = s.pieces;
    split_byte_level(text, p);
    const auto& bytes = p.char_bytes;
    for (size_t piece = 0; piece + 1 < p.piece_chars.size(); ++piece) {
        const uint32_t first = bytes[p.piece_chars[piece]], last = bytes[p.piece_chars[piece + 1]];
        size_t c = p.piece_chars[piece];  // the character holding the token's first byte
        uint32_t begin = first;
        for (const BpeToken& token : word_tokens(t, text.substr(first, last - first), s)) {
            const uint32_t end = first + token.end;
            while (bytes[c + 1] <= begin) ++c;
            size_t c_end = c;  // the character holding its last byte
            while (bytes[c_end + 1] < end) ++c_end;
            const std::string_view text_of_id = t.tokens[token.id];
            const size_t lead = leading_spaces(text_of_id), trail = trailing_spaces(text_of_id);
            out.ids.push_back(token.id);
            out.offsets.push_back(
                trimmed({(int32_t)(base.char_index + c), (int32_t)(base.char_index + c_end + 1)}, lead, trail));
            out.byte_offsets.push_back(
                trimmed({(int32_t)(base.byte + bytes[c]), (int32_t)(base.byte + bytes[c_end + 1])}, lead, trail));
            begin = end;
        }
    }
}

}  // namespace

BpeTokenizer load_bpe_tokenizer(const std::string& vocab_json, const std::string& merges_txt) {
    static std::atomic<uint64_t> loads{0};
    BpeTokenizer t;
    t.vocab_path = vocab_json;
    t.merges_path = merges_txt;
    const std::unordered_map<std::string, int32_t> ids = read_vocab_json(t);
    const auto id_of = [&](const std::string& token) {
        const auto it = ids.find(token);
        return it == ids.end() ? -1 : it->second;
    };
    for (const char* special : {"<s>", "<pad>", "</s>", "<unk>", "<mask>"}) {
        const int32_t id = id_of(special);
        if (id < 0 && std::string_view(special) != "<mask>")
            throw std::runtime_error("vocab file " + vocab_json + " lacks " + special);
        if (id >= 0) t.special_tokens.push_back({special, id, std::string_view(special) == "<mask>"});
    }
    t.cls_id = id_of("<s>");
    t.pad_id = id_of("<pad>");
    t.sep_id = id_of("</s>");
    t.unk_id = id_of("<unk>");
    t.mask_id = id_of("<mask>");
    for (int b = 0; b < 256; ++b) {
        const int32_t id = id_of(byte_level_char((uint8_t)b));
        t.byte_ids[b] = id >= 0 ? id : t.unk_id;
    }
    read_merges(t, ids);
    t.serial = ++loads;
    return t;
}

void tokenize(const BpeTokenizer& tokenizer, std::string_view text, BpeScratch& scratch, WordPieces& out) {
    out.ids.clear();
    out.offsets.clear();
    out.byte_offsets.clear();
    if (scratch.serial != tokenizer.serial) {
        scratch.cache.clear();
        scratch.serial = tokenizer.serial;
    }
    TextPosition at;  // where the current stretch starts
    while (true) {
        const BpeSpecialMatch special = find_special(tokenizer, text, at.byte);
        const std::string_view stretch = text.substr(at.byte, special.stretch_end - at.byte);
        tokenize_stretch(tokenizer, stretch, at, scratch, out);
        if (!special.token) return;
        at.char_index += code_points(text.substr(at.byte, special.begin - at.byte));
        const uint32_t chars = code_points(text.substr(special.begin, special.end - special.begin));
        out.ids.push_back(special.token->id);
        out.offsets.push_back({(int32_t)at.char_index, (int32_t)(at.char_index + chars)});
        out.byte_offsets.push_back({(int32_t)special.begin, (int32_t)special.end});
        at.char_index += chars;
        at.byte = (uint32_t)special.end;
    }
}

SpecialTemplate roberta_template(const BpeTokenizer& tokenizer) {
    return {.cls_id = tokenizer.cls_id, .sep_id = tokenizer.sep_id, .pad_id = tokenizer.pad_id,
            .separators_between = 2, .second_type_id = 0};
}

}  // namespace qdq
