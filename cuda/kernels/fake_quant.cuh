// Fake quantization with the clipped straight-through gradient on the device, per tensor or per
// channel, with the CPU op's value function (fake_quant_value, cuda/quant_math.h) and mask (PQ's
// |x| <= amax). The tensor is seen as [outer, C, inner] around the channel axis (C = 1 per
// tensor): element i belongs to channel (i / inner) mod C. Compile with -fmad=false.
#pragma once

#include <cstdint>

#include "cuda/kernels/for_each.cuh"
#include "cuda/quant_math.h"

namespace qdq::cuda {

struct FakeQuantForwardOp {
    float* y;
    const float* x;
    const float* amax;  // [C]
    float bound, lo;
    int64_t C, inner;
    __host__ __device__ void operator()(int64_t i) const {
        const ChannelScale s = channel_scale(amax[(i / inner) % C], bound);
        y[i] = fake_quant_value(x[i], s.scale, s.divisor, lo, bound, INFINITY);
    }
};

// dx[i] += dy[i] where |x[i]| <= its channel's amax
struct FakeQuantBackwardOp {
    float* dx;
    const float* dy;
    const float* x;
    const float* amax;
    int64_t C, inner;
    __host__ __device__ void operator()(int64_t i) const { dx[i] += fabsf(x[i]) <= amax[(i / inner) % C] ? dy[i] : 0.0f; }
};

}  // namespace qdq::cuda
