#include "data/vocab.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace qdq {
namespace {

uint64_t hash_bytes(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: tokens are short, so it is as fast as any
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h ^ h >> 29;  // the low bits index the table; fold the better-mixed high bits in
}

std::pair<size_t, size_t> bloom_bits(const Vocab& vocab, uint64_t hash) {
    const size_t mask = vocab.bloom.size() * 64 - 1;
    return {(size_t)(hash >> 20) & mask, (size_t)(hash >> 40) & mask};
}

bool bloom_may_contain(const Vocab& vocab, uint64_t hash) {
    const auto [a, b] = bloom_bits(vocab, hash);
    return (vocab.bloom[a / 64] >> (a % 64) & 1) && (vocab.bloom[b / 64] >> (b % 64) & 1);
}

// The slot that holds token, or the empty slot where it belongs.
size_t find_slot(const Vocab& vocab, std::string_view token, uint64_t hash) {
    const uint32_t tag = (uint32_t)(hash >> 32);
    const size_t mask = vocab.slots.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const Vocab::Slot& s = vocab.slots[i];
        if (s.id_plus_one == 0) return i;
        if (s.hash_tag == tag && vocab_token(vocab, (int32_t)(s.id_plus_one - 1)) == token) return i;
    }
}

}  // namespace

int32_t vocab_size(const Vocab& vocab) { return (int32_t)vocab.token_begin.size() - 1; }

std::string_view vocab_token(const Vocab& vocab, int32_t id) {
    return std::string_view(vocab.bytes).substr(vocab.token_begin[id],
                                                vocab.token_begin[id + 1] - vocab.token_begin[id]);
}

int32_t vocab_id(const Vocab& vocab, std::string_view token) {
    const uint64_t hash = hash_bytes(token);
    if (!bloom_may_contain(vocab, hash)) return -1;
    return (int32_t)vocab.slots[find_slot(vocab, token, hash)].id_plus_one - 1;
}

Vocab load_vocab(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open vocab file " + path);
    std::ostringstream content;
    content << in.rdbuf();
    const std::string text = content.str();

    Vocab vocab;
    vocab.path = path;
    vocab.token_begin.push_back(0);
    for (size_t pos = 0; pos < text.size();) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string_view token(text.data() + pos, end - pos);
        if (!token.empty() && token.back() == '\r') token.remove_suffix(1);
        const size_t line = vocab.token_begin.size();
        if (token.empty()) throw std::runtime_error(path + ":" + std::to_string(line) + ": empty token");
        vocab.bytes.append(token);
        vocab.token_begin.push_back((uint32_t)vocab.bytes.size());
        vocab.max_token_bytes = std::max(vocab.max_token_bytes, token.size());
        pos = end + 1;
    }
    if (vocab_size(vocab) == 0) throw std::runtime_error("vocab file " + path + " has no tokens");

    size_t capacity = 1;
    while (capacity < 2 * (size_t)vocab_size(vocab)) capacity <<= 1;
    vocab.slots.assign(capacity, {});
    vocab.bloom.assign(capacity / 8, 0);  // 8 bits per slot, so at least 16 per token
    for (int32_t id = 0; id < vocab_size(vocab); ++id) {
        const std::string_view token = vocab_token(vocab, id);
        const uint64_t hash = hash_bytes(token);
        Vocab::Slot& slot = vocab.slots[find_slot(vocab, token, hash)];
        if (slot.id_plus_one != 0)
            throw std::runtime_error(path + ":" + std::to_string(id + 1) + ": duplicate token '" + std::string(token) +
                                     "' (first on line " + std::to_string(slot.id_plus_one) + ")");
        slot = {(uint32_t)id + 1, (uint32_t)(hash >> 32)};
        const auto [a, b] = bloom_bits(vocab, hash);
        vocab.bloom[a / 64] |= 1ull << (a % 64);
        vocab.bloom[b / 64] |= 1ull << (b % 64);
    }
    return vocab;
}

}  // namespace qdq
