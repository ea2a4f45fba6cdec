// How well a range fits the values its quantizer sees, for the per-quantizer calibration report:
// the fraction clipped, and the signal-to-quantization-noise ratio
//   SQNR = 10·log10(Σ x² / Σ (fake_quant(x) − x)²)  dB   (+inf when quantization is exact),
// where the noise counts both rounding and clipping. About 6 dB per bit for a well-used range;
// a low value marks the quantizer that costs accuracy.
#pragma once

#include "autograd/tensor.h"
#include "quant/calibrators.h"
#include "quant/fake_quant.h"

namespace qdq {

struct RangeStats {
    double clipped_fraction = 0;  // of the values, those beyond amax in magnitude
    double sqnr_db = 0;
};

// From an activation histogram, at its resolution: each bin's count stands at its centre, and a
// bin counts as clipped when its left edge is at or beyond amax. With 2048 bins over the range
// a bin is at least 16 times narrower than an 8-bit step, so rounding noise is resolved.
RangeStats histogram_range_stats(const HistogramCalibrator& calib, float amax);

// Exactly, over a tensor (a weight) and its amax: per tensor, or per channel over axis 0.
RangeStats tensor_range_stats(const Tensor& x, const Tensor& amax, const QuantParams& params);

}  // namespace qdq
