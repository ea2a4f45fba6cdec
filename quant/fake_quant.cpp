// Fake quantization forward and clipped-STE backward (the math and its PQ references are in
// fake_quant.h). A tensor is seen as [outer, C, inner] around the per-channel axis (C = 1 per
// tensor); every kernel below works on a contiguous run of one channel, whose scale is a scalar.
#include "quant/fake_quant.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/ops/vector_math.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "cuda/quant_math.h"
#include "quant/channel_runs.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;
// y [n] = fake_quant_value(x [n]) (cuda/quant_math.h, shared with the GPU). quant/CMakeLists.txt
// turns off FMA contraction, as that header asks.
QDQ_VECTOR_KERNEL
void fake_quant_forward(float* y, const float* x, float scale, float divisor, float lo, float hi,
                        float clip, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = fake_quant_value(x[i], scale, divisor, lo, hi, clip);
}

// dx [n] += dy where |x| <= amax (PQ's _fake_tensor_quant_backward)
QDQ_VECTOR_KERNEL
void fake_quant_backward(float* dx, const float* dy, const float* x, float amax, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] += std::fabs(x[i]) <= amax ? dy[i] : 0.0f;
}

// dx [n] += dy where -amax < x < amax (PQ's ClipFunction mask, open at both ends)
QDQ_VECTOR_KERNEL
void clip_backward_input(float* dx, const float* dy, const float* x, float amax, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] += (x[i] > -amax && x[i] < amax) ? dy[i] : 0.0f;
}

// Σ dy·[x >= amax] − Σ dy·[x <= -amax] over [n]
QDQ_VECTOR_KERNEL
double clip_backward_amax(const float* dy, const float* x, float amax, int64_t n) {
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += (double)dy[i] * (double)pact_amax_term(x[i], amax);
    return sum;
}

// dx [n] += dy where lo <= fl(x·scale) <= hi (LSQ: the code before rounding is in range)
QDQ_VECTOR_KERNEL
void lsq_backward_input(float* dx, const float* dy, const float* x, float scale, float lo, float hi,
                        int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i] * scale;
        dx[i] += (v >= lo && v <= hi) ? dy[i] : 0.0f;
    }
}

// Σ dy·∂(y/s)/∂s over [n]: round(v) − v inside [lo, hi], the bound crossed outside.
QDQ_VECTOR_KERNEL
double lsq_backward_step(const float* dy, const float* x, float scale, float lo, float hi, int64_t n) {
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) sum += (double)dy[i] * (double)lsq_step_term(x[i], scale, lo, hi);
    return sum;
}

// run(begin, length, channel) on every single-channel run, in parallel chunks.
template <typename Run>
void parallel_channel_runs(const AxisSplit& split, Run&& run) {
    parallel_for(split.outer * split.n * split.inner, kGrain, [&](int64_t begin, int64_t end) {
        for_each_channel_run(split, begin, end, run);
    });
}

// Per channel, Σ over its elements of term(begin, length, channel): fixed blocks of kGrain
// elements, each block's partial sums added in block order, so the result is the same whatever
// the thread count.
template <typename Term>
std::vector<double> channel_sums(const AxisSplit& split, Term&& term) {
    int64_t numel = split.outer * split.n * split.inner, blocks = (numel + kGrain - 1) / kGrain;
    std::vector<double> partial((size_t)(blocks * split.n), 0.0);
    parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b)
            for_each_channel_run(split, b * kGrain, std::min(numel, (b + 1) * kGrain),
                                 [&](int64_t begin, int64_t n, int64_t c) {
                                     partial[(size_t)(b * split.n + c)] += term(begin, n, c);
                                 });
    });
    std::vector<double> sums((size_t)split.n, 0.0);
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t c = 0; c < split.n; ++c) sums[(size_t)c] += partial[(size_t)(b * split.n + c)];
    return sums;
}

void check_no_negative(const Tensor& x) {
    std::atomic<bool> negative{false};
    const float* px = x.f32();
    parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
        float m = 0.0f;
#pragma omp simd reduction(min : m)
        for (int64_t i = begin; i < end; ++i) m = std::min(m, px[i]);
        if (m < 0.0f) negative = true;
    });
    check(!negative, "fake_quant: negative values in unsigned quantization (PQ raises the same)");
}

}  // namespace

QuantParams quant_params(const QuantDescriptor& d) {
    return QuantParams{d.num_bits, d.unsigned_, d.narrow_range, d.axis, d.learn_amax, d.learn_step_size};
}

float quant_bound(const QuantParams& p) {
    return (float)((int64_t{1} << (p.num_bits - 1 + (p.unsigned_ ? 1 : 0))) - 1);
}

float quant_min(const QuantParams& p) {
    float bound = quant_bound(p);
    return p.unsigned_ ? 0.0f : p.narrow_range ? -bound : -bound - 1.0f;
}

namespace {

// LSQ's gradient scale times the chain rule to amax: ds = g·Σ, damax = ds / bound, with
// g = 1/sqrt(N·bound) for N elements per step (fake_quant.h); PACT's sum is amax's gradient.
double learned_range_factor(const QuantParams& p, const AxisSplit& split, float bound) {
    return p.learn_step_size ? 1.0 / (std::sqrt((double)(split.outer * split.inner) * bound) * bound) : 1.0;
}

// The forward pass on the device (cuda/kernels/fake_quant.cuh): fake-quantized values, or with
// `codes` the integer codes. The kernel checks the ranges too (and an unsigned quantizer's
// inputs), and a bad one is the error of the next read from the device
// (cuda::report_range_fault), not a wait on every call.
Tensor fake_quant_values_cuda(const Tensor& x, const Tensor& amax, const QuantParams& p, const AxisSplit& split, bool codes) {
    Tensor y = empty(x.shape(), DType::F32, Device::CUDA);
    cuda::fake_quant_forward(y.f32(), x.f32(), amax.f32(), quant_bound(p), quant_min(p), split.n, split.inner, x.numel(),
                             p.learn_amax, codes);
    return y;
}

// The device path: the forward above and its straight-through backward.
Tensor fake_quant_cuda(const Tensor& x, const Tensor& amax, const QuantParams& p, const AxisSplit& split) {
    Tensor y = fake_quant_values_cuda(x, amax, p, split, false);
    const float bound = quant_bound(p), lo = quant_min(p);
    const int rule = p.learn_step_size ? kLsq : p.learn_amax ? kPact : kClippedSte;
    if (needs_grad({x, amax}))
        record(y, {x, amax}, [x, amax, split, bound, lo, rule, factor = learned_range_factor(p, split, bound)](const Tensor& gy) {
            if (x.requires_grad())
                cuda::fake_quant_backward(x.grad_buffer().f32(), gy.f32(), x.f32(), amax.f32(), bound, lo, split.n, split.inner,
                                          x.numel(), rule);
            if (amax.requires_grad())
                cuda::learned_range_backward(amax.grad_buffer().f32(), gy.f32(), x.f32(), amax.f32(), bound, lo, rule, split.n,
                                             split.inner, x.numel(), factor);
        });
    return y;
}

// The checks every call makes; x's split around the per-channel axis.
AxisSplit checked_split(const Tensor& x, const Tensor& amax, const QuantParams& p) {
    check(x.defined() && x.dtype() == DType::F32, "fake_quant: x must be float32");
    check(amax.defined() && amax.dtype() == DType::F32, "fake_quant: amax must be float32");
    check(p.num_bits >= 2 && p.num_bits <= 16,
          "fake_quant: num_bits must be in [2, 16], got " + std::to_string(p.num_bits));
    check(!p.learn_amax || !p.axis, "fake_quant: learn_amax is per tensor only");
    check(!p.learn_amax || !p.learn_step_size, "fake_quant: learn_amax and learn_step_size exclude each other");
    check(p.learn_amax || p.learn_step_size || !amax.requires_grad(),
          "fake_quant: amax requires grad but neither learn_amax nor learn_step_size is on (PQ passes no "
          "gradient to amax)");
    AxisSplit split = channel_split(x.shape(), p.axis, "fake_quant");
    check(amax.numel() == split.n,
          "fake_quant: amax has " + std::to_string(amax.numel()) + " values, expected " +
              std::to_string(split.n) + (p.axis ? " (one per channel)" : " (per tensor)"));
    check_same_device("fake_quant", {x, amax});
    return split;
}

// Each channel's scale, its amax checked; x checked when unsigned.
std::vector<ChannelScale> checked_scales(const Tensor& x, const Tensor& amax, const QuantParams& p, const AxisSplit& split) {
    std::vector<ChannelScale> scales((size_t)split.n);
    const float* pa = amax.f32();
    for (int64_t c = 0; c < split.n; ++c) {
        check(std::isfinite(pa[c]) && pa[c] >= 0.0f,
              "fake_quant: amax[" + std::to_string(c) + "] = " + std::to_string(pa[c]) +
                  ": amax must be finite and >= 0 (NaN: not calibrated)");
        scales[(size_t)c] = channel_scale(pa[c], quant_bound(p));
    }
    if (p.unsigned_) check_no_negative(x);
    return scales;
}

// The forward pass on the CPU: fake-quantized values, or with `codes` the integer codes.
Tensor fake_quant_values(const Tensor& x, const Tensor& amax, const QuantParams& p, const AxisSplit& split,
                         const std::vector<ChannelScale>& scales, bool codes) {
    const float bound = quant_bound(p), lo = quant_min(p);
    Tensor y = empty(x.shape());
    float* py = y.f32();
    const float* px = x.f32();
    const float clip = p.learn_amax ? amax.f32()[0] : INFINITY;
    parallel_channel_runs(split, [&](int64_t begin, int64_t n, int64_t c) {
        const ChannelScale& s = scales[(size_t)c];
        fake_quant_forward(py + begin, px + begin, s.scale, codes ? 1.0f : s.divisor, lo, bound, clip, n);
    });
    return y;
}

}  // namespace

Tensor quant_codes(const Tensor& x, const Tensor& amax, const QuantParams& p) {
    const AxisSplit split = checked_split(x, amax, p);
    if (x.is_cuda()) return fake_quant_values_cuda(x, amax, p, split, true);
    return fake_quant_values(x, amax, p, split, checked_scales(x, amax, p, split), true);
}

Tensor fake_quant(const Tensor& x, const Tensor& amax, const QuantParams& p) {
    const AxisSplit split = checked_split(x, amax, p);
    if (x.is_cuda()) return fake_quant_cuda(x, amax, p, split);
    std::vector<ChannelScale> scales = checked_scales(x, amax, p, split);
    Tensor y = fake_quant_values(x, amax, p, split, scales, false);
    const float bound = quant_bound(p), lo = quant_min(p);
    if (needs_grad({x, amax}))
        record(y, {x, amax}, [x, amax, split, p, lo, bound, scales = std::move(scales)](const Tensor& gy) {
            const float* g = gy.f32();
            const float* px = x.f32();
            if (x.requires_grad()) {
                float* gx = x.grad_buffer().f32();
                parallel_channel_runs(split, [&](int64_t begin, int64_t n, int64_t c) {
                    const ChannelScale& s = scales[(size_t)c];
                    if (p.learn_step_size) lsq_backward_input(gx + begin, g + begin, px + begin, s.scale, lo, bound, n);
                    else if (p.learn_amax) clip_backward_input(gx + begin, g + begin, px + begin, s.amax, n);
                    else fake_quant_backward(gx + begin, g + begin, px + begin, s.amax, n);
                });
            }
            if (!amax.requires_grad()) return;
            std::vector<double> sums = channel_sums(split, [&](int64_t begin, int64_t n, int64_t c) {
                const ChannelScale& s = scales[(size_t)c];
                if (p.learn_step_size) return lsq_backward_step(g + begin, px + begin, s.scale, lo, bound, n);
                return clip_backward_amax(g + begin, px + begin, s.amax, n);
            });
            const double factor = learned_range_factor(p, split, bound);
            float* ga = amax.grad_buffer().f32();
            for (int64_t c = 0; c < split.n; ++c) ga[c] += (float)(sums[(size_t)c] * factor);
        });
    return y;
}

}  // namespace qdq
