// Calibration's collecting pass on the device (quant/calibrators.h): a running max of |x| per
// channel, and a histogram's counts of |x| in bins of a fixed width, with the CPU's bin of a
// value (histogram_bin, cuda/quant_math.h). Maxima are kept as float bits, whose order is the
// values' for |x|, so that atomicMax on integers takes them; counts by 64-bit atomicAdd. NaN and
// infinities are counted apart (the CPU refuses them). Growing the range is the caller's, as on
// the CPU: a batch whose max lies beyond range_end is binned again once the bins have grown.
#pragma once

#include <cstdint>

#include "cuda/kernels/for_each.cuh"
#include "cuda/quant_math.h"

namespace qdq::cuda {

// amax_bits[c] = max(amax_bits[c], bits of |x|) over channel c's elements of [outer, C, inner]
struct MaxCollectOp {
    uint32_t* amax_bits;
    unsigned long long* nonfinite;
    const float* x;
    int64_t C, inner;
    __device__ void operator()(int64_t i) const {
        const float v = fabsf(x[i]);
        if (!(v <= 3.402823466e38f)) {
            atomicAdd(nonfinite, 1ull);
            return;
        }
        atomicMax(amax_bits + (i / inner) % C, float_bits(v));
    }
};

// counts[histogram_bin(|x|)] += 1 for |x| <= range_end; max_bits = bits of the largest finite |x|
struct HistogramCollectOp {
    unsigned long long* counts;
    uint32_t* max_bits;
    unsigned long long* nonfinite;
    const float* x;
    float width, range_end, last;  // last = bins − 1
    __device__ void operator()(int64_t i) const {
        const float v = fabsf(x[i]);
        if (!(v <= 3.402823466e38f)) {
            atomicAdd(nonfinite, 1ull);
            return;
        }
        atomicMax(max_bits, float_bits(v));
        if (v <= range_end) atomicAdd(counts + histogram_bin(v, width, last), 1ull);
    }
};

}  // namespace qdq::cuda
