// LayerNorm's entry points (cuda/kernels/layernorm.cuh) over device pointers, one block per row
// of the size its length asks for.
#include "cuda/backend.h"
#include "cuda/device_array.h"
#include "cuda/kernels/layernorm.cuh"

namespace qdq::cuda {

void layernorm_rows_forward(float* y, float* mean, float* rstd, float* sum, const float* x, const float* residual,
                            const float* gamma, const float* beta, float eps, int64_t rows, int64_t C) {
    layernorm_forward(y, mean, rstd, sum, x, residual, gamma, beta, eps, rows, C, row_block_for(C));
}

void layernorm_rows_backward(float* dx, float* dx2, float* dgamma, float* dbeta, const float* dy, const float* in,
                             const float* mean, const float* rstd, const float* gamma, int64_t rows, int64_t C) {
    DeviceArray<float> partials((size_t)(layernorm_row_blocks(rows) * 2 * C), Uninitialized{});
    layernorm_backward(dx, dx2, dgamma, dbeta, partials.ptr, dy, in, mean, rstd, gamma, rows, C, row_block_for(C));
}

}  // namespace qdq::cuda
