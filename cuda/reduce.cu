// The axis reductions' entry points (cuda/kernels/reduce.cuh) over device pointers.
#include "cuda/backend.h"
#include "cuda/kernels/reduce.cuh"

namespace qdq::cuda {

void axis_sum(float* y, const float* x, int64_t outer, int64_t n, int64_t inner, float scale) {
    for_each(outer * inner, AxisSumOp{y, x, n, inner, scale});
}
void axis_spread(float* dx, const float* dy, int64_t outer, int64_t n, int64_t inner, float scale) {
    for_each(outer * n * inner, AxisSpreadOp{dx, dy, n, inner, scale});
}

}  // namespace qdq::cuda
