#include "quant/range_stats.h"

#include <cmath>
#include <limits>

namespace qdq {

namespace {

double sqnr_db(double signal, double noise) {
    if (noise == 0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(signal / noise);
}

}  // namespace

RangeStats histogram_range_stats(const HistogramCalibrator& calib, float amax) {
    check(calib.width > 0.0f, "histogram_range_stats: the histogram holds no nonzero value");
    const int64_t bins = (int64_t)calib.counts.size();
    Tensor centres = empty({bins});
    float* c = centres.f32();
    for (int64_t j = 0; j < bins; ++j) c[j] = (histogram_edge(calib, j) + histogram_edge(calib, j + 1)) / 2.0f;
    Tensor quantized = fake_quant(centres, full({}, amax), {calib.num_bits, calib.unsigned_});
    const float* q = quantized.f32();
    double total = 0, clipped = 0, signal = 0, noise = 0;
    for (int64_t j = 0; j < bins; ++j) {
        const double n = (double)calib.counts[(size_t)j], e = (double)q[j] - (double)c[j];
        total += n;
        if (histogram_edge(calib, j) >= amax) clipped += n;
        signal += n * (double)c[j] * (double)c[j];
        noise += n * e * e;
    }
    return {clipped / total, sqnr_db(signal, noise)};
}

RangeStats tensor_range_stats(const Tensor& x_anywhere, const Tensor& amax_anywhere, const QuantParams& params) {
    const Tensor x = x_anywhere.cpu(), amax = amax_anywhere.cpu();
    // Per channel over axis 0 of a [out, in] weight (PQ's keepdims amax {out, 1}): row i / in.
    const float* pa = amax.f32();
    const int64_t n = x.numel(), channels = params.axis ? amax.numel() : 1, per_channel = n / channels;
    check(!params.axis || (*params.axis == 0 && x.dim() == 2 && x.size(0) == channels),
          "tensor_range_stats: per channel, only over axis 0 of a 2-D x with one amax per row");
    Tensor quantized = fake_quant(x, amax, params);
    const float* px = x.f32();
    const float* pq = quantized.f32();
    double clipped = 0, signal = 0, noise = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double e = (double)pq[i] - (double)px[i];
        if (std::fabs(px[i]) > pa[channels == 1 ? 0 : i / per_channel]) clipped += 1;
        signal += (double)px[i] * (double)px[i];
        noise += e * e;
    }
    return {clipped / (double)n, sqnr_db(signal, noise)};
}

}  // namespace qdq
