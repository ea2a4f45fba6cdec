#include "data/tokenizer.h"

#include <algorithm>
#include <stdexcept>

namespace qdq {
namespace {

constexpr std::string_view kContinuation = "##";

int32_t required_id(const Vocab& vocab, std::string_view token) {
    const int32_t id = vocab_id(vocab, token);
    if (id < 0) throw std::runtime_error("vocab file " + vocab.path + " lacks " + std::string(token));
    return id;
}

void push_piece(WordPieces& out, int32_t id, const SourceSpan& first, const SourceSpan& last) {
    out.ids.push_back(id);
    out.offsets.push_back({(int32_t)first.char_begin, (int32_t)last.char_end});
    out.byte_offsets.push_back({(int32_t)first.byte_begin, (int32_t)last.byte_end});
}

// Greedy longest-match-first: at each position take the longest vocab entry ("##"-prefixed
// after the first piece); a word with no complete split is one [UNK] over the whole word.
void wordpiece(const WordPieceTokenizer& tokenizer, const NormalizedText& text, const WordSpan& word,
               std::string& candidate, WordPieces& out) {
    const auto& chars = text.chars;
    const SourceSpan& word_first = chars[word.first].source;
    const SourceSpan& word_last = chars[word.end - 1].source;
    if ((int32_t)(word.end - word.first) > tokenizer.max_input_chars_per_word) {
        push_piece(out, tokenizer.unk_id, word_first, word_last);
        return;
    }
    const size_t pieces_before = out.ids.size();
    for (uint32_t start = word.first; start < word.end;) {
        const size_t prefix = start == word.first ? 0 : kContinuation.size();
        int32_t id = -1;
        uint32_t end = word.end;
        for (; end > start; --end) {
            const std::string_view piece = normalized_bytes(text, start, end);
            if (prefix + piece.size() > tokenizer.vocab.max_token_bytes) continue;
            if (prefix == 0) {
                id = vocab_id(tokenizer.vocab, piece);
            } else {
                candidate.assign(kContinuation);
                candidate.append(piece);
                id = vocab_id(tokenizer.vocab, candidate);
            }
            if (id >= 0) break;
        }
        if (id < 0) {
            out.ids.resize(pieces_before);
            out.offsets.resize(pieces_before);
            out.byte_offsets.resize(pieces_before);
            push_piece(out, tokenizer.unk_id, word_first, word_last);
            return;
        }
        push_piece(out, id, chars[start].source, chars[end - 1].source);
        start = end;
    }
}

struct SpecialMatch {
    size_t begin;                 // where it starts; the text's size when none is left
    const SpecialToken* token;    // null when none is left
};

// The leftmost special token at or after `from`, the longest one where two start together.
SpecialMatch find_special(const WordPieceTokenizer& tokenizer, std::string_view text, size_t from) {
    for (size_t at = text.find('[', from); at != std::string_view::npos; at = text.find('[', at + 1)) {
        const SpecialToken* best = nullptr;
        for (const SpecialToken& special : tokenizer.special_tokens)
            if (text.substr(at).starts_with(special.text) && (!best || special.text.size() > best->text.size()))
                best = &special;
        if (best) return {at, best};
    }
    return {text.size(), nullptr};
}

uint32_t code_points(std::string_view utf8) {
    uint32_t count = 0;
    for (char c : utf8) count += ((unsigned char)c & 0xC0) != 0x80;
    return count;
}

// Lengths the two texts keep (tokenizers' truncate_encodings with stride 0, from the right);
// budget is max_length less the special tokens.
void truncated_lengths(size_t max_length, size_t budget, Truncation truncation, bool has_second, size_t& n1,
                       size_t& n2) {
    if (budget == 0) {  // tokenizers empties both texts here, whatever the strategy
        n1 = n2 = 0;
        return;
    }
    if (n1 + n2 <= budget) return;
    if (truncation == Truncation::only_second) {
        if (!has_second)
            throw std::invalid_argument("truncation only_second needs a second text (the first alone is " +
                                        std::to_string(n1) + " tokens, over the limit)");
        const size_t to_remove = n1 + n2 - budget;
        if (n2 <= to_remove)
            throw std::invalid_argument("truncation only_second cannot fit: the first text alone is " +
                                        std::to_string(n1) + " tokens of the " + std::to_string(budget) +
                                        " allowed besides special tokens");
        n2 -= to_remove;
        return;
    }
    if (!has_second) {
        n1 = budget;
        return;
    }
    // Keep a short text whole when the long one can absorb the cut; otherwise split the budget,
    // the odd token going to the longer text (the second one on a tie). tokenizers 0.23 has
    // already cut each text to max_length tokens when it compares them, so two texts that both
    // reach max_length tie (measured over all lengths up to 40 and max_length up to 33).
    const bool swapped = std::min(n1, max_length) > std::min(n2, max_length);
    size_t shorter = std::min(n1, n2), longer;
    longer = shorter > budget ? shorter : std::max(shorter, budget - shorter);
    if (shorter + longer > budget) {
        shorter = budget / 2;
        longer = shorter + budget % 2;
    }
    n1 = swapped ? longer : shorter;
    n2 = swapped ? shorter : longer;
}

void append_special(Encoding& e, int32_t id, int32_t type_id) {
    e.ids.push_back(id);
    e.token_type_ids.push_back(type_id);
    e.attention_mask.push_back(1);
    e.offsets.push_back({});
    e.byte_offsets.push_back({});
}

void append_pieces(Encoding& e, const WordPieces& pieces, size_t count, int32_t type_id) {
    e.ids.insert(e.ids.end(), pieces.ids.begin(), pieces.ids.begin() + count);
    e.token_type_ids.insert(e.token_type_ids.end(), count, type_id);
    e.attention_mask.insert(e.attention_mask.end(), count, 1);
    e.offsets.insert(e.offsets.end(), pieces.offsets.begin(), pieces.offsets.begin() + count);
    e.byte_offsets.insert(e.byte_offsets.end(), pieces.byte_offsets.begin(), pieces.byte_offsets.begin() + count);
}

Encoding assemble(const WordPieceTokenizer& tokenizer, const WordPieces& first, const WordPieces* second,
                  const EncodeOptions& options) {
    const size_t specials = second ? 3 : 2;
    size_t n1 = first.ids.size(), n2 = second ? second->ids.size() : 0;
    if (options.max_length > 0) {
        if ((size_t)options.max_length < specials)
            throw std::invalid_argument("max_length " + std::to_string(options.max_length) +
                                        " leaves no room for the " + std::to_string(specials) + " special tokens");
        truncated_lengths(options.max_length, options.max_length - specials, options.truncation, second != nullptr,
                          n1, n2);
    }
    const size_t length = std::max(n1 + n2 + specials, options.pad_to_max_length ? (size_t)options.max_length : 0);
    Encoding e;
    e.ids.reserve(length);
    e.token_type_ids.reserve(length);
    e.attention_mask.reserve(length);
    e.offsets.reserve(length);
    e.byte_offsets.reserve(length);
    append_special(e, tokenizer.cls_id, 0);
    append_pieces(e, first, n1, 0);
    append_special(e, tokenizer.sep_id, 0);
    if (second) {
        append_pieces(e, *second, n2, 1);
        append_special(e, tokenizer.sep_id, 1);
    }
    const size_t padding = length - e.ids.size();
    e.ids.insert(e.ids.end(), padding, tokenizer.pad_id);
    e.token_type_ids.insert(e.token_type_ids.end(), padding, 0);
    e.attention_mask.insert(e.attention_mask.end(), padding, 0);
    e.offsets.insert(e.offsets.end(), padding, TokenSpan{});
    e.byte_offsets.insert(e.byte_offsets.end(), padding, TokenSpan{});
    return e;
}

}  // namespace

WordPieceTokenizer load_wordpiece_tokenizer(const std::string& vocab_path, bool uncased) {
    WordPieceTokenizer t;
    t.vocab = load_vocab(vocab_path);
    t.uncased = uncased;
    t.unk_id = required_id(t.vocab, "[UNK]");
    t.cls_id = required_id(t.vocab, "[CLS]");
    t.sep_id = required_id(t.vocab, "[SEP]");
    t.pad_id = required_id(t.vocab, "[PAD]");
    for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
        if (const int32_t id = vocab_id(t.vocab, special); id >= 0) t.special_tokens.push_back({special, id});
    return t;
}

void tokenize(const WordPieceTokenizer& tokenizer, std::string_view text, NormalizedText& scratch,
              WordPieces& out) {
    out.ids.clear();
    out.offsets.clear();
    out.byte_offsets.clear();
    std::string candidate;
    candidate.reserve(tokenizer.vocab.max_token_bytes);
    // The text between special tokens is normalized and split on its own, its spans then moved
    // to where it starts in the whole text.
    SourceSpan at;  // the start of the current stretch, in bytes and code points
    size_t begin = 0;
    while (true) {
        const SpecialMatch special = find_special(tokenizer, text, begin);
        const std::string_view stretch = text.substr(begin, special.begin - begin);
        normalize_and_split(stretch, tokenizer.uncased, scratch);
        const size_t first_piece = out.ids.size();
        for (const WordSpan& word : scratch.words) wordpiece(tokenizer, scratch, word, candidate, out);
        for (size_t i = first_piece; i < out.ids.size(); ++i) {
            out.offsets[i].begin += (int32_t)at.char_begin, out.offsets[i].end += (int32_t)at.char_begin;
            out.byte_offsets[i].begin += (int32_t)at.byte_begin, out.byte_offsets[i].end += (int32_t)at.byte_begin;
        }
        if (!special.token) return;
        at.char_begin += code_points(stretch);
        at.byte_begin = (uint32_t)special.begin;
        const uint32_t length = (uint32_t)special.token->text.size();  // ASCII: bytes = code points
        push_piece(out, special.token->id, {at.byte_begin, at.byte_begin + length, at.char_begin, at.char_begin + length},
                   {at.byte_begin, at.byte_begin + length, at.char_begin, at.char_begin + length});
        at.byte_begin += length;
        at.char_begin += length;
        begin = at.byte_begin;
    }
}

// Buffers that encode() reuses from call to call, one set per thread.
struct EncodeScratch {
    NormalizedText normalized;
    WordPieces first, second;
};
thread_local EncodeScratch encode_scratch;

Encoding encode(const WordPieceTokenizer& tokenizer, std::string_view text, const EncodeOptions& options) {
    EncodeScratch& s = encode_scratch;
    tokenize(tokenizer, text, s.normalized, s.first);
    return assemble(tokenizer, s.first, nullptr, options);
}

Encoding encode_pair(const WordPieceTokenizer& tokenizer, std::string_view first, std::string_view second,
                     const EncodeOptions& options) {
    EncodeScratch& s = encode_scratch;
    tokenize(tokenizer, first, s.normalized, s.first);
    tokenize(tokenizer, second, s.normalized, s.second);
    return assemble(tokenizer, s.first, &s.second, options);
}

}  // namespace qdq
