// Seeded, deterministic random numbers for initialisation and dropout.
// Rng is xoshiro256** (small state, saved in checkpoints so a resumed run draws the same
// numbers). Dropout does not consume one draw per element: it takes one 64-bit key per call
// and hashes (key, element index), so masks are identical whatever the thread count.
#pragma once

#include <array>
#include <cstdint>

#include "cuda/counter_hash.h"  // mix64, hashed_uniform: the same bits on the CPU and the GPU

namespace qdq {

struct Rng {
    std::array<uint64_t, 4> state{};

    explicit Rng(uint64_t seed = 0);
    uint64_t next_u64();
    // The state `n` next_u64 calls leave, in a few dozen bit-matrix products (see rng.cpp).
    void jump(uint64_t n);
    float uniform();                           // [0, 1)
    float normal(float mean, float stddev);    // Box-Muller, from two draws
};

// The value Rng::normal makes of its two draws, `first` and `second` in the order drawn: a
// caller that takes the draws itself can turn them into values on several threads.
float normal_from_draws(uint64_t first, uint64_t second, float mean, float stddev);

}  // namespace qdq
