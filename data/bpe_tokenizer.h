// RoBERTa's byte-level BPE tokenizer, with the semantics of Hugging Face's RobertaTokenizerFast
// (tokenizers: added tokens, ByteLevel pre-tokenizer, BPE model, RobertaProcessing with
// trim_offsets), checked against an independent implementation by tests/test_bpe_tokenizer.cpp:
//   1. special tokens written in the text are matched first, leftmost and longest first; <mask>
//      also removes the whitespace before it (lstrip, as RobertaTokenizerFast declares it), which
//      then gives no token, <mask>'s span staying its own characters;
//   2. the text between them is cut into pieces and mapped to byte-level characters
//      (data/byte_level.h);
//   3. BPE, each piece on its own: starting from its bytes, the adjacent pair with the lowest rank
//      in merges.txt is merged, the leftmost of equal pairs first, until no pair of the piece has
//      a rank (tokenizers' Word::merge_all); ids from vocab.json. A byte whose character
//      vocab.json lacks becomes <unk>, which a byte-level vocabulary, holding all 256, never needs;
//   4. offsets: the characters a token's bytes came from, less the spaces ('Ġ') it begins or ends
//      with (ByteLevel's trim_offsets): " word" spans "word", and a token of spaces alone spans
//      nothing at its end. A token that holds part of a character spans the whole character.
// The frame around texts is RoBERTa's (data/encoding.h): "<s> A </s>", "<s> A </s></s> B </s>".
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/byte_level.h"
#include "data/encoding.h"

namespace qdq {

struct BpeMerge {
    int32_t rank = 0;       // its line in merges.txt, from 0: lower merges first
    int32_t merged_id = 0;  // the token of the two joined
};

struct BpeTokenizer {
    std::string vocab_path, merges_path;  // for messages
    std::vector<std::string> tokens;      // id -> token in the byte-level alphabet ("" where vocab.json skips an id)
    std::array<int32_t, 256> byte_ids{};  // each byte's one-character token (unk_id when vocab.json lacks it)
    std::unordered_map<uint64_t, BpeMerge> merges;  // left id << 32 | right id -> the merge
    std::vector<SpecialToken> special_tokens;       // <s> <pad> </s> <unk>, and <mask> when vocab.json has it
    int32_t unk_id = -1, cls_id = -1, sep_id = -1, pad_id = -1, mask_id = -1;  // <unk> <s> </s> <pad> <mask>
    uint64_t serial = 0;  // which load this is: a BpeScratch's word cache belongs to one
};

// Throws std::runtime_error naming the file (and line of merges.txt) when a file is unreadable or
// malformed, a merge names a token vocab.json lacks, or vocab.json lacks <s> </s> <pad> <unk>.
BpeTokenizer load_bpe_tokenizer(const std::string& vocab_json, const std::string& merges_txt);

// One merged token of a word: its id and where its bytes end in the word.
struct BpeToken {
    int32_t id;
    uint32_t end;
};

// Lets the word cache be searched with a string_view, without building a std::string per lookup.
struct TransparentStringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Buffers tokenize() reuses, and the merges of words seen before: text repeats its words, and a
// word's BPE costs far more than a lookup. One per thread; the cache empties when it is full or
// used with another tokenizer.
struct BpeScratch {
    uint64_t serial = 0;
    std::unordered_map<std::string, std::vector<BpeToken>, TransparentStringHash, std::equal_to<>> cache;
    ByteLevelPieces pieces;
    std::vector<BpeToken> word;
};

// Replaces out's contents (offsets as data/encoding.h describes). Throws std::invalid_argument
// for invalid UTF-8.
void tokenize(const BpeTokenizer& tokenizer, std::string_view text, BpeScratch& scratch, WordPieces& out);

// RoBERTa's frame: "<s> A </s>", "<s> A </s></s> B </s>", token types all 0.
SpecialTemplate roberta_template(const BpeTokenizer& tokenizer);

}  // namespace qdq
