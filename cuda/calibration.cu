// Calibration's collecting kernels' entry points (cuda/kernels/calibration.cuh) over device
// pointers.
#include "cuda/backend.h"
#include "cuda/kernels/calibration.cuh"

namespace qdq::cuda {

void max_collect(uint32_t* amax_bits, unsigned long long* nonfinite, const float* x, int64_t C, int64_t inner, int64_t n) {
    for_each(n, MaxCollectOp{amax_bits, nonfinite, x, C, inner});
}
void histogram_collect(unsigned long long* counts, uint32_t* max_bits, unsigned long long* nonfinite, const float* x,
                       float width, int64_t bins, int64_t n) {
    for_each(n, HistogramCollectOp{counts, max_bits, nonfinite, x, width, (float)bins * width, (float)(bins - 1)});
}

}  // namespace qdq::cuda
