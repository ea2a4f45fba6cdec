// Row softmax entry points of the backend: cuda/kernels/softmax.cuh over device pointers.
#include "cuda/backend.h"
#include "cuda/kernels/softmax.cuh"

namespace qdq::cuda {

void softmax_rows_forward(float* y, const float* x, const float* mask, const int64_t* mask_rows, float scale,
                          int64_t rows, int64_t C) {
    softmax_forward(y, x, mask, mask_rows, scale, rows, C);
}

void softmax_rows_backward(float* dx, const float* dy, const float* y, float scale, int64_t rows, int64_t C) {
    softmax_backward(dx, dy, y, scale, rows, C);
}

}  // namespace qdq::cuda
