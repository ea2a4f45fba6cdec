// Fake quantization of one value, which the CPU kernels (quant/fake_quant.cpp) and the CUDA
// kernel (cuda/kernels/fake_quant.cuh) both run, the per-channel constants it needs, and a
// histogram calibrator's bin of a value (quant/calibrators.cpp, cuda/kernels/calibration.cuh). Both
// sides must compile it without contracting x·scale into a fused multiply-add (g++
// -ffp-contract=off, nvcc -fmad=false): PQ rounds x·scale to float32 before rounding it to an
// integer.
#pragma once

#include <cstdint>

#include "cuda/host_device.h"

namespace qdq {

// PQ: "Treat amax smaller than minimum representable of fp16 0".
constexpr float kTinyAmax = 0x1.0p-24f;
// Adding then subtracting 1.5·2^23 rounds a float of magnitude < 2^22 to an integer, ties to
// even (the default rounding mode), as std::nearbyint and torch.round do. Unlike nearbyint it
// vectorises on baseline x86-64, which has no SSE4.1 round instruction. The value is clamped to
// [lo, hi] first; those are integers, so clamping before rounding changes nothing.
constexpr float kRoundShift = 12582912.0f;

// One channel's constants. PQ sets the scale of a tiny amax to 0 (every code 0) and divides by 1.
struct ChannelScale {
    float amax, scale, divisor;
};

QDQ_HOST_DEVICE ChannelScale channel_scale(float amax, float bound) {
    if (amax <= kTinyAmax) return {amax, 0.0f, 1.0f};
    const float s = bound / amax;
    return {amax, s, s};
}

// clamp(round(clamp(x, ±clip)·scale), lo, hi) / divisor; clip is +inf unless the range is
// learned. Ternaries, not std::min/max: those return references, which inside an omp simd loop
// GCC keeps in memory and then refuses to vectorise. NaN passes through as with them.
QDQ_HOST_DEVICE float fake_quant_value(float x, float scale, float divisor, float lo, float hi, float clip) {
    float v = x < -clip ? -clip : x;
    v = (clip < v ? clip : v) * scale;
    v = v < lo ? lo : v;
    v = hi < v ? hi : v;
    return ((v + kRoundShift) - kRoundShift) / divisor;
}

// Which straight-through gradient the input of fake quantization gets (quant/fake_quant.h):
// PQ's clipped STE, PACT's (learn_amax) or LSQ's (learn_step_size).
enum SteRule : int { kClippedSte = 0, kPact = 1, kLsq = 2 };

// What one element adds to a learned range's gradient (before the sum's factor), given dy:
// PACT (learn_amax): [x >= amax] − [x <= −amax], the clip's upper bound's gradient less its lower
// one's, so 0 where both hold (amax = x = 0), as in PQ's Clip;
// LSQ (learn_step_size): ∂(y/s)/∂s, round(v) − v for v = x·scale inside [lo, hi], the bound
// crossed outside.
QDQ_HOST_DEVICE float pact_amax_term(float x, float amax) {
    return (x >= amax ? 1.0f : 0.0f) - (x <= -amax ? 1.0f : 0.0f);
}
QDQ_HOST_DEVICE float lsq_step_term(float x, float scale, float lo, float hi) {
    const float v = x * scale;
    const float inside = ((v + kRoundShift) - kRoundShift) - v;
    return v < lo ? lo : (hi < v ? hi : inside);
}

// The word fake quantization's checks on the device leave (cuda/range_fault.cu): 0 for no fault,
// else the first, inverted, ~((channel << 32) | the offending float's bits), so that atomicMax
// keeps the smallest channel. A negative input of unsigned quantization, which PQ's kernel
// asserts against, takes the channel kNegativeInputFault: after every range's.
constexpr uint32_t kNegativeInputFault = 0xffffffffu;
QDQ_HOST_DEVICE unsigned long long fault_word_of(uint64_t channel, float value) {
    return ~((channel << 32) | float_bits(value));
}

// A histogram calibrator's bin for |x| = v within its range (quant/calibrators.h):
// min(floor(v / width), bins − 1), v / width in float32, `last` = bins − 1 as a float.
QDQ_HOST_DEVICE int32_t histogram_bin(float v, float width, float last) {
    const float q = v / width;
    return (int32_t)(last < q ? last : q);
}

}  // namespace qdq
