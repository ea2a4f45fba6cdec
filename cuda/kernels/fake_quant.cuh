// Fake quantization on the device, per tensor or per channel, with the CPU op's value function
// (fake_quant_value, cuda/quant_math.h) and its straight-through gradients: PQ's clipped one
// (|x| <= amax), PACT's (learn_amax: the input clipped to ±amax first; the gradient inside the
// open range) and LSQ's (learn_step_size: inside [lo, bound] before rounding); and the learned
// range's gradient, summed per channel in double. The tensor is seen as [outer, C, inner] around
// the channel axis (C = 1 per tensor): element i belongs to channel (i / inner) mod C. Compile
// with -fmad=false.
#pragma once

#include <cstdint>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/for_each.cuh"
#include "cuda/quant_math.h"

namespace qdq::cuda {

// The first channel whose range fake quantization cannot use (NaN, infinite or negative), in the
// fault word (fault_word_of).
__device__ inline void check_range(const float* amax, int64_t c, unsigned long long* fault) {
    const float a = amax[c];
    if (!(a >= 0.0f && a < INFINITY)) atomicMax(fault, fault_word_of((uint64_t)c, a));
}

// A negative input where the integer range starts at lo = 0, which only unsigned quantization's does.
__device__ inline void check_unsigned_input(float x, float lo, unsigned long long* fault) {
    if (lo == 0.0f && x < 0.0f) atomicMax(fault, fault_word_of(kNegativeInputFault, x));
}

struct RangeCheckOp {
    const float* amax;
    unsigned long long* fault;
    __device__ void operator()(int64_t c) const { check_range(amax, c, fault); }
};

// Threads 0 to C − 1 (there are n ≥ C of them) also check the ranges, which saves a launch; each
// thread checks its input when unsigned.
struct FakeQuantForwardOp {
    float* y;
    const float* x;
    const float* amax;  // [C]
    float bound, lo;
    int64_t C, inner;
    bool clip_to_amax;  // PACT
    bool codes;         // the integer codes, not divided back (quant_codes)
    unsigned long long* fault;
    __device__ void operator()(int64_t i) const {
        if (i < C) check_range(amax, i, fault);
        check_unsigned_input(x[i], lo, fault);
        const float a = amax[(i / inner) % C];
        const ChannelScale s = channel_scale(a, bound);
        y[i] = fake_quant_value(x[i], s.scale, codes ? 1.0f : s.divisor, lo, bound, clip_to_amax ? a : INFINITY);
    }
};

// dx[i] += dy[i] where the rule lets the gradient through
struct FakeQuantBackwardOp {
    float* dx;
    const float* dy;
    const float* x;
    const float* amax;
    float bound, lo;
    int64_t C, inner;
    int rule;
    __host__ __device__ void operator()(int64_t i) const {
        const float a = amax[(i / inner) % C], v = x[i];
        bool through = fabsf(v) <= a;
        if (rule == kPact) through = v > -a && v < a;
        if (rule == kLsq) {
            const float q = v * channel_scale(a, bound).scale;
            through = q >= lo && q <= bound;
        }
        dx[i] += through ? dy[i] : 0.0f;
    }
};

// partial[c·blocks_per_channel + b] = Σ dy·term over block b's share of channel c's elements
// (pact_amax_term or lsq_step_term), in double; LearnedRangeAddOp adds each channel's partials.
static __global__ void learned_range_partials(double* partial, const float* dy, const float* x, const float* amax,
                                              float bound, float lo, int rule, int64_t C, int64_t inner,
                                              int64_t per_channel, unsigned blocks_per_channel) {
    const int64_t c = blockIdx.x / blocks_per_channel, b = blockIdx.x % blocks_per_channel;
    const float a = amax[c], scale = channel_scale(a, bound).scale;
    double sum = 0;
    for (int64_t j = b * blockDim.x + threadIdx.x; j < per_channel; j += (int64_t)blocks_per_channel * blockDim.x) {
        const int64_t i = ((j / inner) * C + c) * inner + j % inner;
        const float term = rule == kLsq ? lsq_step_term(x[i], scale, lo, bound) : pact_amax_term(x[i], a);
        sum += (double)dy[i] * (double)term;
    }
    sum = block_reduce(sum, SumOp{}, 0.0);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// damax[c] += Σ_b partial[c·blocks_per_channel + b] · factor: one thread per channel adds its
// partials in order, in double, so the sum does not depend on the scheduling of the blocks.
struct LearnedRangeAddOp {
    float* damax;
    const double* partial;
    unsigned blocks_per_channel;
    double factor;
    __host__ __device__ void operator()(int64_t c) const {
        double sum = 0;
        for (unsigned b = 0; b < blocks_per_channel; ++b) sum += partial[c * blocks_per_channel + b];
        damax[c] += (float)(sum * factor);
    }
};

inline void learned_range_sums(double* partial, const float* dy, const float* x, const float* amax, float bound,
                               float lo, int rule, int64_t C, int64_t inner, int64_t per_channel,
                               unsigned blocks_per_channel, unsigned block = 256) {
    check_row_block(block, "learned_range_sums");
    launch(learned_range_partials, dim3((unsigned)(C * blocks_per_channel)), dim3(block), partial, dy, x, amax, bound, lo,
           rule, C, inner, per_channel, blocks_per_channel);
}

}  // namespace qdq::cuda
