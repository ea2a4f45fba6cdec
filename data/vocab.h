// A WordPiece vocabulary: vocab.txt holds one token per line, and a token's id is its line
// number counted from 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qdq {

struct Vocab {
    std::string path;                   // for messages
    std::string bytes;                  // every token, back to back
    std::vector<uint32_t> token_begin;  // [size + 1]: token id's bytes are [begin[id], begin[id + 1])
    // Open addressing with linear probing, at most half full, so that a miss (most lookups
    // during WordPiece's longest-match search) ends fast. A slot holds id + 1 (0 when empty)
    // and the upper half of the token's hash, so that the token's bytes are only read on a
    // near-certain match.
    struct Slot {
        uint32_t id_plus_one = 0;
        uint32_t hash_tag = 0;
    };
    std::vector<Slot> slots;
    // A Bloom filter over the tokens (two bits each, from the same hash; about 16 bits per
    // token): small enough to stay in cache, it answers most misses without touching slots.
    std::vector<uint64_t> bloom;
    size_t max_token_bytes = 0;  // no longer candidate can match
};

// Throws std::runtime_error naming the file (and the line, for an empty or duplicate token).
Vocab load_vocab(const std::string& path);

int32_t vocab_size(const Vocab& vocab);
std::string_view vocab_token(const Vocab& vocab, int32_t id);
int32_t vocab_id(const Vocab& vocab, std::string_view token);  // -1 when absent

}  // namespace qdq
