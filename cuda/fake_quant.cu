// Fake quantization's entry points (cuda/kernels/fake_quant.cuh) over device pointers: the
// forward checks the ranges as it goes (cuda/range_fault.cu); a learned range's gradient sums
// its blocks' partials on the device, in a fixed order, without a wait.
#include "cuda/backend.h"
#include "cuda/device_array.h"
#include "cuda/kernels/fake_quant.cuh"

namespace qdq::cuda {

void fake_quant_forward(float* y, const float* x, const float* amax, float bound, float lo, int64_t C, int64_t inner,
                        int64_t n, bool clip_to_amax, bool codes) {
    unsigned long long* fault = range_fault_word();
    if (n == 0) for_each(C, RangeCheckOp{amax, fault});  // no element to check them
    for_each(n, FakeQuantForwardOp{y, x, amax, bound, lo, C, inner, clip_to_amax, codes, fault});
}
void fake_quant_backward(float* dx, const float* dy, const float* x, const float* amax, float bound, float lo, int64_t C,
                         int64_t inner, int64_t n, int rule) {
    for_each(n, FakeQuantBackwardOp{dx, dy, x, amax, bound, lo, C, inner, rule});
}

void learned_range_backward(float* damax, const float* dy, const float* x, const float* amax, float bound, float lo,
                            int rule, int64_t C, int64_t inner, int64_t n, double factor) {
    if (n == 0) return;
    const int64_t per_channel = n / C;
    const unsigned block = 256, per_block = (unsigned)((per_channel + block - 1) / block);
    const unsigned blocks_per_channel = per_block < 1 ? 1 : per_block < 64 ? per_block : 64;
    DeviceArray<double> partial((size_t)(C * blocks_per_channel), Uninitialized{});
    learned_range_sums(partial.ptr, dy, x, amax, bound, lo, rule, C, inner, per_channel, blocks_per_channel, block);
    for_each(C, LearnedRangeAddOp{damax, partial.ptr, blocks_per_channel, factor});
}

}  // namespace qdq::cuda
