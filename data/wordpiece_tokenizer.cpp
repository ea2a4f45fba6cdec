#include "data/wordpiece_tokenizer.h"

#include <stdexcept>

#include "data/utf8.h"

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

struct WordPieceSpecialMatch {
    size_t begin;                 // where it starts; the text's size when none is left
    const SpecialToken* token;    // null when none is left
};

// The leftmost special token at or after `from`, the longest one where two start together.
WordPieceSpecialMatch find_special(const WordPieceTokenizer& tokenizer, std::string_view text, size_t from) {
    for (size_t at = text.find('[', from); at != std::string_view::npos; at = text.find('[', at + 1)) {
        const SpecialToken* best = nullptr;
        for (const SpecialToken& special : tokenizer.special_tokens)
            if (text.substr(at).starts_with(special.text) && (!best || special.text.size() > best->text.size()))
                best = &special;
        if (best) return {at, best};
    }
    return {text.size(), nullptr};
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
        const WordPieceSpecialMatch special = find_special(tokenizer, text, begin);
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

SpecialTemplate bert_template(const WordPieceTokenizer& tokenizer) {
    return {.cls_id = tokenizer.cls_id, .sep_id = tokenizer.sep_id, .pad_id = tokenizer.pad_id,
            .separators_between = 1, .second_type_id = 1};
}

Encoding encode(const WordPieceTokenizer& tokenizer, std::string_view text, const EncodeOptions& options) {
    EncodeScratch& s = encode_scratch;
    tokenize(tokenizer, text, s.normalized, s.first);
    return assemble_encoding(bert_template(tokenizer), s.first, nullptr, options);
}

Encoding encode_pair(const WordPieceTokenizer& tokenizer, std::string_view first, std::string_view second,
                     const EncodeOptions& options) {
    EncodeScratch& s = encode_scratch;
    tokenize(tokenizer, first, s.normalized, s.first);
    tokenize(tokenizer, second, s.normalized, s.second);
    return assemble_encoding(bert_template(tokenizer), s.first, &s.second, options);
}

}  // namespace qdq
