// Seeded, deterministic random numbers for initialisation and dropout.
// Rng is xoshiro256** (small state, saved in checkpoints so a resumed run draws the same
// numbers). Dropout does not consume one draw per element: it takes one 64-bit key per call
// and hashes (key, element index), so masks are identical whatever the thread count.
#pragma once

#include <array>
#include <cstdint>

namespace qdq {

struct Rng {
    std::array<uint64_t, 4> state{};

    explicit Rng(uint64_t seed = 0);
    uint64_t next_u64();
    float uniform();                           // [0, 1)
    float normal(float mean, float stddev);    // Box-Muller
};

// splitmix64 finaliser: a bijective 64-bit mix, good enough to turn a counter into bits.
inline uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Uniform [0, 1) float for element `index` of the stream named by `key`.
inline float hashed_uniform(uint64_t key, uint64_t index) {
    return (float)(mix64(key ^ mix64(index)) >> 40) * 0x1.0p-24f;
}

}  // namespace qdq
