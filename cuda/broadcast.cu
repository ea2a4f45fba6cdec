// The broadcasting binary ops' entry points (cuda/kernels/broadcast.cuh) over device pointers.
#include "cuda/backend.h"
#include "cuda/device_array.h"
#include "cuda/kernels/broadcast.cuh"

namespace qdq::cuda {

void add_trailing(float* y, const float* a, const float* b, int64_t n, int64_t nb) { for_each(n, AddTrailingOp{y, a, b, nb}); }
void repeat_trailing(float* y, const float* b, int64_t n, int64_t nb) { for_each(n, RepeatTrailingOp{y, b, nb}); }

// A few copies in one kernel; many by blocks of kRepeatBlock, then the blocks' sums.
void sum_repeats(float* db, const float* dy, int64_t nb, int64_t repeats) {
    const int64_t blocks = (repeats + kRepeatBlock - 1) / kRepeatBlock;
    if (blocks <= 1) {
        for_each(nb, SumRepeatsOp{db, dy, nb, repeats});
        return;
    }
    DeviceArray<float> partials((size_t)(blocks * nb), Uninitialized{});
    for_each(blocks * nb, RepeatPartialsOp{partials.ptr, dy, nb, repeats});
    for_each(nb, SumRepeatsOp{db, partials.ptr, nb, blocks});
}
void broadcast_binary(float* y, const float* a, const float* b, const BroadcastShape& s, int kind, int64_t n) {
    for_each(n, BroadcastBinaryOp{y, a, b, s, kind});
}
void broadcast_binary_backward(float* dx, const float* dy, const float* a, const float* b, const BroadcastShape& s,
                               int kind, int which, int64_t x_numel) {
    for_each(x_numel, BroadcastBinaryGradOp{dx, dy, a, b, s, kind, which});
}

}  // namespace qdq::cuda
