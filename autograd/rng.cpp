#include "autograd/rng.h"

#include <cmath>
#include <vector>

namespace qdq {

Rng::Rng(uint64_t seed) {
    // Seeding through splitmix64 as xoshiro's authors recommend: never an all-zero state.
    uint64_t x = seed;
    for (auto& s : state) {
        x += 0x9e3779b97f4a7c15ull;
        s = mix64(x);
    }
}

namespace {

using State = std::array<uint64_t, 4>;

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void advance(State& s) {
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
}

// A 256×256 matrix over GF(2), as its columns: column j is the image of the state whose only set
// bit is bit j.
using BitMatrix = std::array<State, 256>;

State times(const BitMatrix& m, const State& s) {
    State out{};
    for (int j = 0; j < 256; ++j)
        if ((s[(size_t)j / 64] >> (j % 64)) & 1)
            for (size_t w = 0; w < 4; ++w) out[w] ^= m[(size_t)j][w];
    return out;
}

// xoshiro's state update is linear over GF(2) (shifts, rotations and xors), so n steps are the
// n-th power of its matrix. powers[k] is the matrix of 2^k steps, each the square of the one
// before; built once, in under 20 ms (a jump then takes about 20 µs).
const std::vector<BitMatrix>& step_powers() {
    static const std::vector<BitMatrix> powers = [] {
        std::vector<BitMatrix> p(64);
        for (size_t j = 0; j < 256; ++j) {
            State unit{};
            unit[j / 64] = uint64_t{1} << (j % 64);
            advance(unit);
            p[0][j] = unit;
        }
        for (size_t k = 1; k < p.size(); ++k)
            for (size_t j = 0; j < 256; ++j) p[k][j] = times(p[k - 1], p[k - 1][j]);
        return p;
    }();
    return powers;
}

}  // namespace

uint64_t Rng::next_u64() {
    uint64_t result = rotl(state[1] * 5, 7) * 9;
    advance(state);
    return result;
}

void Rng::jump(uint64_t n) {
    if (n == 0) return;
    const std::vector<BitMatrix>& powers = step_powers();
    for (size_t k = 0; k < 64; ++k)
        if ((n >> k) & 1) state = times(powers[k], state);
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
