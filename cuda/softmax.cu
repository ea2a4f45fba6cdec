// softmax's entry points (cuda/kernels/softmax.cuh) over device pointers, one block per row of
// the size its length asks for.
#include "cuda/backend.h"
#include "cuda/kernels/softmax.cuh"

namespace qdq::cuda {

void softmax_rows_forward(float* y, const float* x, const float* mask, const int64_t* mask_rows, float scale,
                          int64_t rows, int64_t C) {
    softmax_forward(y, x, mask, mask_rows, scale, rows, C, row_block_for(C));
}

void softmax_rows_backward(float* dx, const float* dy, const float* y, float scale, int64_t rows, int64_t C) {
    softmax_backward(dx, dy, y, scale, rows, C, row_block_for(C));
}

}  // namespace qdq::cuda
