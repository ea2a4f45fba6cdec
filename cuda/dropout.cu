// Dropout's entry points (cuda/kernels/dropout.cuh) over device pointers.
#include "cuda/backend.h"
#include "cuda/kernels/dropout.cuh"

namespace qdq::cuda {

void dropout_forward(float* y, const float* x, uint64_t key, float p, float scale, int64_t n) {
    for_each(n, DropoutForwardOp{y, x, key, p, scale});
}
void dropout_backward(float* dx, const float* dy, uint64_t key, float p, float scale, int64_t n) {
    for_each(n, DropoutBackwardOp{dx, dy, key, p, scale});
}

}  // namespace qdq::cuda
