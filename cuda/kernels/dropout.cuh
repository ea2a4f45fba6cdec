// Inverted dropout as functors for for_each, with the CPU op's mask (autograd/ops/dropout.cpp):
// element i is dropped when hashed_uniform(key, i) < p (cuda/counter_hash.h), so one key gives
// the same mask on both sides, and backward recomputes it instead of storing it.
#pragma once

#include <cstdint>

#include "cuda/counter_hash.h"
#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

// y[i] = x[i]·scale where kept, else 0
struct DropoutForwardOp {
    float* y;
    const float* x;
    uint64_t key;
    float p, scale;
    __host__ __device__ void operator()(int64_t i) const { y[i] = hashed_uniform(key, (uint64_t)i) < p ? 0.0f : x[i] * scale; }
};

// dx[i] += dy[i]·scale where kept
struct DropoutBackwardOp {
    float* dx;
    const float* dy;
    uint64_t key;
    float p, scale;
    __host__ __device__ void operator()(int64_t i) const {
        dx[i] += hashed_uniform(key, (uint64_t)i) < p ? 0.0f : dy[i] * scale;
    }
};

}  // namespace qdq::cuda
