// Counter-based random bits: the value for (key, index) is a pure function of the two, so the
// CPU and the GPU draw the same dropout mask for a key whatever the threads, blocks or order
// (the idea of Philox, with a cheaper mix). One key is drawn per call from a seeded Rng
// (autograd/rng.h), the element index is the counter.
#pragma once

#include <cstdint>

#include "cuda/host_device.h"

namespace qdq {

// splitmix64's finaliser: a bijective 64-bit mix, good enough to turn a counter into bits.
QDQ_HOST_DEVICE uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// Uniform [0, 1) float for element `index` of the stream named by `key`.
QDQ_HOST_DEVICE float hashed_uniform(uint64_t key, uint64_t index) {
    return (float)(mix64(key ^ mix64(index)) >> 40) * 0x1.0p-24f;
}

}  // namespace qdq
