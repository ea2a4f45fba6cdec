// Fake quantization (quantize, then dequantize, in float32) with a clipped straight-through
// gradient: PQ's FakeTensorQuantFunction on its CPU path (tensor_quant.py, _tensor_quant), value
// for value.
//
//   bound = 2^(bits-1+unsigned) - 1          127 for int8
//   lo    = 0 (unsigned) | -bound (narrow_range) | -bound-1
//   s     = bound / amax                      float32 division
//   y     = clamp(round_half_even(x·s), lo, bound) / s      x·s rounded to float32 first
//   amax <= 2^-24 gives y = 0                 (PQ: "smaller than the minimum fp16")
//
// Dequantization divides by s, as PQ does. ONNX DequantizeLinear (and torch's
// fake_quantize_per_*_affine) instead multiply by the exported scale amax/bound rounded to
// float32; the two differ by at most one ulp of y, on some elements (tests/test_quant.cpp counts
// them). The integer codes differ only where x·s lies within float rounding of a tie k + 1/2:
// ONNX QuantizeLinear computes x/(amax/bound) and torch x·(1/(amax/bound)), each rounded
// differently from x·(bound/amax).
//
// Gradient (PQ's clipped STE): dx = dy where |x| <= amax (inclusive), 0 elsewhere; amax gets
// none. With learn_amax (per tensor only), PQ first applies its PACT clip (nn/functional.py
// ClipFunction) to [-amax, amax] with a learnable bound, so then
//   y    = fake_quant(clamp(x, -amax, amax))    (differs from the above only for x < -amax
//                                                 in the full signed range: -bound, not -bound-1)
//   dx   = dy where -amax < x < amax (exclusive: the clip's mask)
//   damax = Σ dy·[x >= amax] − Σ dy·[x <= -amax]
// The last line is PQ's two clip gradients (to clip_value_max: Σ dy·[x >= max]; to
// clip_value_min: Σ dy·[x <= min]) for one symmetric parameter, min = -amax. PQ's
// quantizer itself passes no gradient to amax; neither do we. PQ keeps the two bounds as two
// parameters (learn_min and learn_max), each stepped by its own gradient and quantizing with
// amax = max(-min, max): they start equal and drift apart, so PQ's range after a step is the
// wider of two, ours the one symmetric bound. Kept symmetric here, as the exported Q/DQ pair
// (zero point 0) is.
//
// With learn_step_size (LSQ, Esser et al. 2020, "Learned Step Size Quantization"; per tensor or
// per channel) the forward is the plain one above and the step s = amax/bound is learned. With
// v = fl(x·scale) (= x/s), Q_P = bound and Q_N = -lo:
//   dx    = dy where lo <= v <= bound (inclusive, as torch.clamp's gradient)
//   ds    = g · Σ dy·(round(v) − v  if lo <= v <= bound;  lo if v < lo;  bound if v > bound)
//   damax = ds / bound                          (s = amax / bound)
//   g     = 1 / sqrt(N · Q_P)                   the paper's gradient scale
// N is the number of elements sharing the step size in the tensor quantized: a channel's
// weights, or every element of an activation batch (the paper counts an activation's features;
// counting the batch too, as common LSQ implementations do, keeps g a function of the tensor alone).
#pragma once

#include <optional>

#include "autograd/tensor.h"
#include "quant/quant_descriptor.h"

namespace qdq {

struct QuantParams {
    int num_bits = 8;
    bool unsigned_ = false;
    bool narrow_range = false;
    // Per-channel axis: amax holds x.size(axis) values (shape [C], or PQ's keepdims [C, 1]).
    // None: amax holds one value.
    std::optional<int64_t> axis{};
    bool learn_amax = false;
    bool learn_step_size = false;
};

QuantParams quant_params(const QuantDescriptor& desc);

// The integer range [lo, bound] of these parameters.
float quant_bound(const QuantParams& p);
float quant_min(const QuantParams& p);

// Values of amax must be finite and >= 0 (NaN is how a quantizer marks an amax not yet
// calibrated). With unsigned_, x must not be negative (PQ raises the same error).
// amax may require grad only with learn_amax or learn_step_size, which exclude each other.
Tensor fake_quant(const Tensor& x, const Tensor& amax, const QuantParams& params);

// The integer codes fake_quant divides back, clamp(round(x·s), lo, bound), as floats (exact:
// |code| <= 2^15). Not recorded: for products computed on the codes in evaluation
// (quant/integer_product.h). The same checks as fake_quant.
Tensor quant_codes(const Tensor& x, const Tensor& amax, const QuantParams& params);

}  // namespace qdq
