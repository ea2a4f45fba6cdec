#include "data/tokenizer.h"

#include <filesystem>
#include <stdexcept>
#include <utility>

namespace qdq {
namespace {

namespace fs = std::filesystem;

// The merges file that goes with a vocab.json: X-vocab.json's X-merges.txt, else merges.txt.
fs::path merges_beside(const fs::path& vocab_json) {
    const std::string name = vocab_json.filename().string();
    const std::string prefix = name.ends_with("vocab.json") ? name.substr(0, name.size() - 10) : "";
    return vocab_json.parent_path() / (prefix + "merges.txt");
}

TokenizerFiles bpe_files(const fs::path& vocab_json) {
    const fs::path merges = merges_beside(vocab_json);
    if (!fs::exists(merges))
        throw std::runtime_error("byte-level BPE vocabulary " + vocab_json.string() + " has no merges file " +
                                 merges.string() + " beside it");
    return {TokenizerKind::ByteLevelBpe, vocab_json.string(), merges.string(), ""};
}

TokenizerFiles directory_files(const fs::path& dir) {
    const fs::path json = dir / "vocab.json", txt = dir / "vocab.txt", config = dir / "tokenizer_config.json";
    const bool has_json = fs::exists(json), has_txt = fs::exists(txt);
    if (has_json && has_txt)
        throw std::runtime_error("tokenizer directory " + dir.string() +
                                 " holds both vocab.txt (WordPiece) and vocab.json (BPE): name the file to use");
    if (!has_json && !has_txt)
        throw std::runtime_error("tokenizer directory " + dir.string() +
                                 " has no vocab.txt (WordPiece) and no vocab.json with merges.txt (BPE)");
    TokenizerFiles files = has_json ? bpe_files(json) : TokenizerFiles{TokenizerKind::WordPiece, txt.string(), "", ""};
    if (fs::exists(config)) files.config = config.string();
    return files;
}

// Buffers that encode() reuses from call to call, one set per thread.
struct EncodeBuffers {
    TokenizeScratch scratch;
    WordPieces first, second;
};
thread_local EncodeBuffers encode_buffers;

}  // namespace

TokenizerFiles tokenizer_files(const std::string& path) {
    if (fs::is_directory(path)) return directory_files(path);
    if (!fs::exists(path)) throw std::runtime_error("tokenizer file " + path + " does not exist");
    if (path.ends_with(".json")) return bpe_files(path);
    return {TokenizerKind::WordPiece, path, "", ""};
}

Tokenizer wordpiece_tokenizer(WordPieceTokenizer wordpiece) {
    Tokenizer t;
    t.kind = TokenizerKind::WordPiece;
    t.special = bert_template(wordpiece);
    t.unk_id = wordpiece.unk_id;
    t.mask_id = vocab_id(wordpiece.vocab, "[MASK]");
    t.mask_token = "[MASK]";
    t.vocab_path = wordpiece.vocab.path;
    t.wordpiece = std::move(wordpiece);
    return t;
}

Tokenizer bpe_tokenizer(BpeTokenizer bpe) {
    Tokenizer t;
    t.kind = TokenizerKind::ByteLevelBpe;
    t.special = roberta_template(bpe);
    t.unk_id = bpe.unk_id;
    t.mask_id = bpe.mask_id;
    t.mask_token = "<mask>";
    t.vocab_path = bpe.vocab_path;
    t.bpe = std::move(bpe);
    return t;
}

Tokenizer load_tokenizer(const std::string& path, bool uncased) {
    const TokenizerFiles files = tokenizer_files(path);
    if (files.kind == TokenizerKind::ByteLevelBpe) return bpe_tokenizer(load_bpe_tokenizer(files.vocab, files.merges));
    return wordpiece_tokenizer(load_wordpiece_tokenizer(files.vocab, uncased));
}

int32_t vocab_size(const Tokenizer& tokenizer) {
    return tokenizer.kind == TokenizerKind::ByteLevelBpe ? (int32_t)tokenizer.bpe.tokens.size()
                                                         : vocab_size(tokenizer.wordpiece.vocab);
}

void tokenize(const Tokenizer& tokenizer, std::string_view text, TokenizeScratch& scratch, WordPieces& out) {
    if (tokenizer.kind == TokenizerKind::ByteLevelBpe) tokenize(tokenizer.bpe, text, scratch.bpe, out);
    else tokenize(tokenizer.wordpiece, text, scratch.normalized, out);
}

Encoding encode(const Tokenizer& tokenizer, std::string_view text, const EncodeOptions& options) {
    EncodeBuffers& b = encode_buffers;
    tokenize(tokenizer, text, b.scratch, b.first);
    return assemble_encoding(tokenizer.special, b.first, nullptr, options);
}

Encoding encode_pair(const Tokenizer& tokenizer, std::string_view first, std::string_view second,
                     const EncodeOptions& options) {
    EncodeBuffers& b = encode_buffers;
    tokenize(tokenizer, first, b.scratch, b.first);
    tokenize(tokenizer, second, b.scratch, b.second);
    return assemble_encoding(tokenizer.special, b.first, &b.second, options);
}

}  // namespace qdq
