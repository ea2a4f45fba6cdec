#include "autograd/rng.h"

#include <cmath>

namespace qdq {

Rng::Rng(uint64_t seed) {
    // Seeding through splitmix64 as xoshiro's authors recommend: never an all-zero state.
    uint64_t x = seed;
    for (auto& s : state) {
        x += 0x9e3779b97f4a7c15ull;
        s = mix64(x);
    }
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t Rng::next_u64() {
    uint64_t result = rotl(state[1] * 5, 7) * 9;
    uint64_t t = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 45);
    return result;
}

float Rng::uniform() { return (float)(next_u64() >> 40) * 0x1.0p-24f; }

float Rng::normal(float mean, float stddev) {
    const uint64_t first = next_u64();
    return normal_from_draws(first, next_u64(), mean, stddev);
}

float normal_from_draws(uint64_t first, uint64_t second, float mean, float stddev) {
    // u1 in (0, 1] so the log is finite.
    double u1 = ((first >> 11) + 1) * 0x1.0p-53;
    double u2 = (second >> 11) * 0x1.0p-53;
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    return mean + stddev * (float)z;
}

}  // namespace qdq
