// Row kernels' entry points of the backend: cuda/kernels/softmax.cuh, layernorm.cuh and
// cross_entropy.cuh over device pointers, each with the block its row length asks for.
#include "cuda/backend.h"
#include "cuda/kernels/cross_entropy.cuh"
#include "cuda/kernels/layernorm.cuh"
#include "cuda/kernels/softmax.cuh"

namespace qdq::cuda {

void softmax_rows_forward(float* y, const float* x, const float* mask, const int64_t* mask_rows, float scale,
                          int64_t rows, int64_t C) {
    softmax_forward(y, x, mask, mask_rows, scale, rows, C, row_block_for(C));
}

void softmax_rows_backward(float* dx, const float* dy, const float* y, float scale, int64_t rows, int64_t C) {
    softmax_backward(dx, dy, y, scale, rows, C, row_block_for(C));
}

void log_softmax_rows_forward(float* y, const float* x, int64_t rows, int64_t C) {
    log_softmax_forward(y, x, rows, C, row_block_for(C));
}

void log_softmax_rows_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t C) {
    log_softmax_backward(dx, dy, y, rows, C, row_block_for(C));
}

void layernorm_rows_forward(float* y, float* mean, float* rstd, float* sum, const float* x, const float* residual,
                            const float* gamma, const float* beta, float eps, int64_t rows, int64_t C) {
    layernorm_forward(y, mean, rstd, sum, x, residual, gamma, beta, eps, rows, C, row_block_for(C));
}

void layernorm_rows_backward(float* dx, float* dx2, float* dgamma, float* dbeta, const float* dy, const float* in,
                             const float* mean, const float* rstd, const float* gamma, int64_t rows, int64_t C) {
    layernorm_backward(dx, dx2, dgamma, dbeta, dy, in, mean, rstd, gamma, rows, C, row_block_for(C));
}

void cross_entropy_rows_forward(float* losses, float* row_max, float* log_sum, const float* x, const int32_t* labels,
                                int32_t ignore_index, int64_t rows, int64_t C) {
    cross_entropy_forward(losses, row_max, log_sum, x, labels, ignore_index, rows, C, row_block_for(C));
}

void cross_entropy_rows_backward(float* dx, const float* x, const float* row_max, const float* log_sum,
                                 const int32_t* labels, int32_t ignore_index, float scale, int64_t rows, int64_t C) {
    cross_entropy_backward(dx, x, row_max, log_sum, labels, ignore_index, scale, rows, C, row_block_for(C));
}

void kl_div_rows_forward(float* losses, float* stats, const float* x, const float* t, float inv_t, int64_t rows, int64_t C) {
    kl_div_forward(losses, stats, x, t, inv_t, rows, C, row_block_for(C));
}

void kl_div_rows_backward(float* dx, const float* x, const float* t, const float* stats, float inv_t, float scale,
                          int64_t rows, int64_t C) {
    kl_div_backward(dx, x, t, stats, inv_t, scale, rows, C, row_block_for(C));
}

}  // namespace qdq::cuda
