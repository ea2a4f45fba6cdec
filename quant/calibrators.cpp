// Collecting calibration statistics: running max of |x| and the growing histogram of |x|
// (semantics in calibrators.h). Both read the tensor in parallel chunks, each chunk into its own
// partial result, merged in a critical section: max is order-independent and counts are integers,
// so the result does not depend on the thread count.
#include "quant/calibrators.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "autograd/ops/vector_math.h"
#include "autograd/parallel.h"
#include "cuda/device_array.h"
#include "cuda/quant_math.h"
#include "quant/channel_runs.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;
constexpr int64_t kBlock = 256;  // bin indices computed (vectorised) this many at a time

void check_float(const Tensor& x, const char* what) {
    if (!x.defined() || x.dtype() != DType::F32) throw std::runtime_error(std::string(what) + ": x must be float32");
}

float from_bits(uint32_t bits) {
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}

void check_finite(int64_t nonfinite, const char* what) {
    check(nonfinite == 0, std::string(what) + ": the tensor holds " + std::to_string(nonfinite) +
                              " NaN or infinite values");
}

// max |x| over [n]; adds the count of NaN and infinite elements (which it skips) to *nonfinite
QDQ_VECTOR_KERNEL
float abs_max(const float* x, int64_t n, int64_t* nonfinite) {
    float m = 0.0f;
    int64_t bad = 0;
#pragma omp simd reduction(max : m) reduction(+ : bad)
    for (int64_t i = 0; i < n; ++i) {
        float v = std::fabs(x[i]);
        bool finite = v <= FLT_MAX;
        m = std::max(m, finite ? v : 0.0f);
        bad += finite ? 0 : 1;
    }
    *nonfinite += bad;
    return m;
}

// idx [n] = min(floor(|x| / width), bins − 1) for |x| <= range_end; `bins` for larger values,
// NaN and infinity (the caller's slow path). Returns the largest |x| within the range.
QDQ_VECTOR_KERNEL
float bin_indices(int32_t* idx, const float* x, float width, float range_end, int32_t bins,
                  int64_t n) {
    float last = (float)(bins - 1);
    float m = 0.0f;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) {
        // Ternaries, not std::min/max, which keep GCC from vectorising (see fake_quant.cpp).
        float v = std::fabs(x[i]);
        bool in = v <= range_end;
        float kept = in ? v : 0.0f;
        idx[i] = in ? histogram_bin(kept, width, last) : bins;
        m = m < kept ? kept : m;
    }
    return m;
}

// max |x| per channel of x seen as [outer, C, inner] (split), NaN and infinities skipped and
// added to *nonfinite; on x's device.
std::vector<float> channel_max(const Tensor& x, const AxisSplit& split, int64_t* nonfinite) {
    if (x.is_cuda()) {
        cuda::DeviceArray<uint32_t> bits(std::vector<uint32_t>((size_t)split.n, 0));
        cuda::DeviceArray<unsigned long long> bad(std::vector<unsigned long long>(1, 0));
        cuda::max_collect(bits.ptr, bad.ptr, x.f32(), split.n, split.inner, x.numel());
        std::vector<float> amax;
        for (uint32_t b : bits.host()) amax.push_back(from_bits(b));
        *nonfinite += (int64_t)bad.host()[0];
        return amax;
    }
    std::vector<float> batch((size_t)split.n, 0.0f);
    const float* px = x.f32();
    parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
        std::vector<float> local((size_t)split.n, 0.0f);
        int64_t bad = 0;
        for_each_channel_run(split, begin, end, [&](int64_t b, int64_t n, int64_t c) {
            local[(size_t)c] = std::max(local[(size_t)c], abs_max(px + b, n, &bad));
        });
#pragma omp critical(qdq_max_merge)
        {
            for (size_t c = 0; c < local.size(); ++c) batch[c] = std::max(batch[c], local[c]);
            *nonfinite += bad;
        }
    });
    return batch;
}

struct BinnedBatch {
    std::vector<int64_t> counts;
    float max = 0.0f;  // largest finite |x|, within the range or beyond it
    int64_t nonfinite = 0;
};

// bin_batch by the device's kernel (cuda/kernels/calibration.cuh): the same bins, counted by
// atomic adds.
BinnedBatch bin_batch_on_device(const HistogramCalibrator& calib, const Tensor& x) {
    const int64_t bins = (int64_t)calib.counts.size();
    cuda::DeviceArray<unsigned long long> counts(std::vector<unsigned long long>((size_t)bins, 0)), bad({0});
    cuda::DeviceArray<uint32_t> max_bits({0});
    cuda::histogram_collect(counts.ptr, max_bits.ptr, bad.ptr, x.f32(), calib.width, bins, x.numel());
    BinnedBatch batch;
    for (unsigned long long c : counts.host()) batch.counts.push_back((int64_t)c);
    batch.max = from_bits(max_bits.host()[0]);
    batch.nonfinite = (int64_t)bad.host()[0];
    return batch;
}

// One pass: the batch's counts in the current bins, and how far it reaches beyond them.
BinnedBatch bin_batch(const HistogramCalibrator& calib, const Tensor& x) {
    if (x.is_cuda()) return bin_batch_on_device(calib, x);
    BinnedBatch batch{std::vector<int64_t>(calib.counts.size(), 0)};
    int32_t bins = (int32_t)calib.counts.size();
    float range_end = histogram_edge(calib, bins);
    const float* px = x.f32();
    parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> counts((size_t)bins, 0);
        float max = 0.0f;
        int64_t nonfinite = 0;
        int32_t idx[kBlock];
        for (int64_t b = begin; b < end; b += kBlock) {
            int64_t n = std::min(kBlock, end - b);
            max = std::max(max, bin_indices(idx, px + b, calib.width, range_end, bins, n));
            for (int64_t k = 0; k < n; ++k) {
                if (idx[k] < bins) {
                    ++counts[(size_t)idx[k]];
                    continue;
                }
                float v = std::fabs(px[b + k]);
                if (v <= FLT_MAX) max = std::max(max, v);
                else ++nonfinite;
            }
        }
#pragma omp critical(qdq_histogram_merge)
        {
            for (int32_t i = 0; i < bins; ++i) batch.counts[(size_t)i] += counts[(size_t)i];
            batch.max = std::max(batch.max, max);
            batch.nonfinite += nonfinite;
        }
    });
    return batch;
}

// The bin count whose range first covers v (v > 0), per calibrators.h.
int64_t bins_covering(const HistogramCalibrator& calib, float v) {
    double needed = std::ceil((double)(v / calib.width));
    check(needed <= (double)kMaxHistogramBins,
          "HistogramCalibrator: a value of " + std::to_string(v) + " needs " +
              std::to_string(needed) + " bins of width " + std::to_string(calib.width) +
              " (more than " + std::to_string(kMaxHistogramBins) +
              "); the range grew beyond reason: check the activations");
    int64_t bins = (int64_t)needed;
    while (histogram_edge(calib, bins) < v) ++bins;
    return bins;
}

}  // namespace

// ---- max ----------------------------------------------------------------------------------

void collect(MaxCalibrator& calib, const Tensor& x) {
    check_float(x, "MaxCalibrator");
    AxisSplit split = channel_split(x.shape(), calib.axis, "MaxCalibrator");
    check(calib.amax.empty() || (int64_t)calib.amax.size() == split.n,
          "MaxCalibrator: amax shape changed: " + std::to_string(calib.amax.size()) +
              " channels before, " + std::to_string(split.n) + " now");
    int64_t nonfinite = 0;
    const std::vector<float> batch = channel_max(x, split, &nonfinite);
    check_finite(nonfinite, "MaxCalibrator");
    if (calib.amax.empty()) calib.amax = batch;
    else
        for (size_t c = 0; c < batch.size(); ++c) calib.amax[c] = std::max(calib.amax[c], batch[c]);
}

void reset(MaxCalibrator& calib) { calib.amax.clear(); }

std::vector<float> compute_amax(const MaxCalibrator& calib) {
    check(!calib.amax.empty(), "MaxCalibrator: no tensor collected");
    return calib.amax;
}

// ---- histogram ----------------------------------------------------------------------------

float histogram_edge(const HistogramCalibrator& calib, int64_t i) {
    return (float)i * calib.width;
}

void collect(HistogramCalibrator& calib, const Tensor& x) {
    check_float(x, "HistogramCalibrator");
    check(calib.initial_bins >= 1 && calib.initial_bins <= kMaxHistogramBins,
          "HistogramCalibrator: initial_bins must be in [1, 2^24]");
    if (calib.counts.empty()) calib.counts.assign((size_t)calib.initial_bins, 0);
    if (calib.width == 0.0f) {
        int64_t nonfinite = 0;
        const float m = channel_max(x, AxisSplit{1, 1, x.numel()}, &nonfinite)[0];
        check_finite(nonfinite, "HistogramCalibrator");
        if (m == 0.0f) {
            calib.counts[0] += x.numel();
            return;
        }
        float width = m / (float)calib.initial_bins;
        check(std::isnormal(width), "HistogramCalibrator: max |x| = " + std::to_string(m) +
                                        " is too small to divide into bins");
        calib.width = width;
    }
    BinnedBatch batch = bin_batch(calib, x);
    check_finite(batch.nonfinite, "HistogramCalibrator");
    if (batch.max > histogram_edge(calib, (int64_t)calib.counts.size())) {
        // Grow, then bin the batch again: values at the old range's end belong in the bins after
        // it once those exist, not in the old last bin.
        calib.counts.resize((size_t)bins_covering(calib, batch.max), 0);
        batch = bin_batch(calib, x);
    }
    for (size_t i = 0; i < calib.counts.size(); ++i) calib.counts[i] += batch.counts[i];
    calib.max = std::max(calib.max, batch.max);
}

void reset(HistogramCalibrator& calib) {
    calib.width = 0.0f;
    calib.max = 0.0f;
    calib.counts.clear();
}

}  // namespace qdq
