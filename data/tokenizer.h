// The tokenizer a task uses: BERT's WordPiece (data/wordpiece_tokenizer.h) or RoBERTa's byte-level
// BPE (data/bpe_tokenizer.h), chosen by the files it is read from, as Hugging Face's
// AutoTokenizer.from_pretrained(dir) chooses. Features (classification, SQuAD windows, masked-LM)
// take this type and work the same with either: tokens of a text, then the kind's frame of
// special tokens (data/encoding.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "data/bpe_tokenizer.h"
#include "data/encoding.h"
#include "data/wordpiece_tokenizer.h"

namespace qdq {

enum class TokenizerKind { WordPiece, ByteLevelBpe };

// Where a tokenizer's files are. `path` may name
//   - a vocab.txt (any name not ending in .json): WordPiece;
//   - a vocab.json: byte-level BPE, its merges beside it (merges.txt, or X-merges.txt for
//     X-vocab.json, as Hugging Face's older downloads name them);
//   - a Hugging Face model directory: vocab.json with merges.txt (BPE), or vocab.txt (WordPiece);
//     its tokenizer_config.json is named too when present.
struct TokenizerFiles {
    TokenizerKind kind = TokenizerKind::WordPiece;
    std::string vocab;   // vocab.txt or vocab.json
    std::string merges;  // BPE: merges.txt
    std::string config;  // a directory's tokenizer_config.json, or empty
};

// Throws std::runtime_error naming the missing file (a vocab.json without its merges, a
// directory with neither vocabulary or with both).
TokenizerFiles tokenizer_files(const std::string& path);

struct Tokenizer {
    TokenizerKind kind = TokenizerKind::WordPiece;
    WordPieceTokenizer wordpiece;  // kind WordPiece
    BpeTokenizer bpe;              // kind ByteLevelBpe
    SpecialTemplate special;       // [CLS]/<s>, [SEP]/</s>, [PAD]/<pad> and how they frame texts
    int32_t unk_id = -1;
    int32_t mask_id = -1;          // -1 when the vocabulary has no mask token
    std::string mask_token;        // "[MASK]" or "<mask>", for messages
    std::string vocab_path;        // for messages
};

// The tokenizer of `path` (see TokenizerFiles); uncased (lowercase and strip accents) applies to
// WordPiece only. Throws std::runtime_error naming the file, as the loaders do.
Tokenizer load_tokenizer(const std::string& path, bool uncased);
Tokenizer wordpiece_tokenizer(WordPieceTokenizer wordpiece);
Tokenizer bpe_tokenizer(BpeTokenizer bpe);

// Tokens in the vocabulary: ids are in [0, vocab_size).
int32_t vocab_size(const Tokenizer& tokenizer);

// Buffers tokenize() reuses, for either kind.
struct TokenizeScratch {
    NormalizedText normalized;
    BpeScratch bpe;
};

// The tokens of one text, without the frame. Throws std::invalid_argument for invalid UTF-8.
void tokenize(const Tokenizer& tokenizer, std::string_view text, TokenizeScratch& scratch, WordPieces& out);

// One text or a pair in the tokenizer's frame, truncated as options say (data/encoding.h).
Encoding encode(const Tokenizer& tokenizer, std::string_view text, const EncodeOptions& options = {});
Encoding encode_pair(const Tokenizer& tokenizer, std::string_view first, std::string_view second,
                     const EncodeOptions& options = {});

}  // namespace qdq
