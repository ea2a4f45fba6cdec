// Calibrators: statistics of the tensors a quantizer sees during calibration, turned into an
// amax afterwards. PQ's calib/max.py and calib/histogram.py (collect / reset / compute_amax);
// REFERENCE-NOTES.md "Calibrators" has the semantics. Each collect() reads the tensor once,
// except that a histogram reads its first batch twice (the maximum sets the bin width) and a
// batch that grows the range twice (it is binned again in the grown bins). Both throw on NaN or
// infinity, which PQ would let through into its amax.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "autograd/tensor.h"

namespace qdq {

// ---- calibrators.cpp: max -------------------------------------------------------------------
// Running max of |x|: over the whole tensor, or per channel over every dim but the axis.
struct MaxCalibrator {
    std::optional<int64_t> axis{};
    std::vector<float> amax{};  // empty until the first collect; one value, or one per channel
};

void collect(MaxCalibrator& calib, const Tensor& x);  // x keeps its channel count across calls
void reset(MaxCalibrator& calib);
std::vector<float> compute_amax(const MaxCalibrator& calib);  // throws if nothing was collected

// ---- calibrators.cpp: histogram (per tensor only, as PQ) -------------------------------------
// |x| counted in bins of one fixed width on [0, range]. The first batch with a nonzero value sets
// width = max|x| / initial_bins; a later, larger value grows the range by appending bins of the
// same width (old counts stay where they are, PQ's semantics):
//   edge(i)  = i·width                            float32
//   bin(v)   = min(floor(v / width), bins − 1)     v / width in float32; the last bin is closed
//   growth   when max v > edge(bins): bins = ceil(max v / width), plus one while edge(bins) < max v;
//            the batch that grows is binned in the grown bins
// Zeros seen before any nonzero value wait in bin 0 (they belong there whatever the width).
struct HistogramCalibrator {
    int num_bits = 8;        // for mse and entropy: the levels a candidate amax is judged with
    bool unsigned_ = false;
    int64_t initial_bins = 2048;
    float width = 0.0f;            // 0 until a nonzero value arrives
    std::vector<int64_t> counts{};  // one per bin; empty until the first collect
    // The largest |x| collected, exactly: the max method's amax, read from the same pass as the
    // histogram methods' (the last bin's edge can lie beyond it).
    float max = 0.0f;
};

void collect(HistogramCalibrator& calib, const Tensor& x);
void reset(HistogramCalibrator& calib);
float histogram_edge(const HistogramCalibrator& calib, int64_t i);
// The bins grow at most to this many (128 MiB of counts): a range that would need more has grown
// by a factor beyond any sane activation, and is reported instead of allocated.
constexpr int64_t kMaxHistogramBins = int64_t{1} << 24;

// ---- histogram_amax.cpp: amax from a histogram (PQ's _compute_amax_*) ----------------------
// Each throws if nothing nonzero was collected or no candidate exists.

// The left edge of the bin in which the CDF, accumulated as Σ count/total in order (numpy's
// cumsum), first reaches percentile/100: edge(first i with cdf[i] >= p/100). Like PQ and ORT this
// is the bin's left edge, so 100 can return less than the largest value.
float percentile_amax(const HistogramCalibrator& calib, double percentile = 99.99);

// The bin centre c_i (i = start_bin, start_bin + stride, ..., bins − 1) minimising
// Σ_j count_j·(fake_quant(c_j, amax = c_i) − c_j)², the first one on ties (numpy argmin).
// Centres are (edge(j) + edge(j+1)) / 2 in float32, as PQ's.
float mse_amax(const HistogramCalibrator& calib, int64_t start_bin = 128, int64_t stride = 1);

// TensorRT's KL calibration as PQ codes it: bin 0's count replaced by bin 1's (the spike of
// exact zeros would dominate); for i = start_bin, ..., bins (stride), reference P = the first i
// bins with the clipped tail folded into the last, candidate Q = the first i bins merged into
// 2^(bits−1+unsigned) levels (bin j in level floor(j·levels/i)), each level's count spread evenly
// over its nonzero bins; KL(P‖Q) of the normalised pair (∞ where Q is 0 and P is not). Returns
// edge(i) of the *last* i with the smallest divergence, as PQ does.
float entropy_amax(const HistogramCalibrator& calib, int64_t start_bin = 128, int64_t stride = 1);

}  // namespace qdq
