// The log-softmax family's entry points (cuda/kernels/cross_entropy.cuh: log_softmax,
// cross-entropy, distillation's KL) over device pointers, one block per row of the size its
// length asks for.
#include "cuda/backend.h"
#include "cuda/kernels/cross_entropy.cuh"

namespace qdq::cuda {

void log_softmax_rows_forward(float* y, const float* x, int64_t rows, int64_t C) {
    log_softmax_forward(y, x, rows, C, row_block_for(C));
}

void log_softmax_rows_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t C) {
    log_softmax_backward(dx, dy, y, rows, C, row_block_for(C));
}

void cross_entropy_rows_forward(float* losses, float* row_max, float* log_sum, const float* x, const int32_t* labels,
                                int32_t ignore_index, int64_t rows, int64_t C) {
    cross_entropy_forward(losses, row_max, log_sum, x, labels, ignore_index, rows, C, row_block_for(C));
}

void cross_entropy_rows_backward(float* dx, const float* x, const float* row_max, const float* log_sum,
                                 const int32_t* labels, int32_t ignore_index, const float* upstream, float over, int64_t rows,
                                 int64_t C) {
    cross_entropy_backward(dx, x, row_max, log_sum, labels, ignore_index, upstream, over, rows, C, row_block_for(C));
}

void mean_of_rows(float* mean, const float* losses, int64_t rows, int64_t count) { rows_mean(mean, losses, rows, count); }

void kl_div_rows_forward(float* losses, float* stats, const float* x, const float* t, float inv_t, int64_t rows, int64_t C) {
    kl_div_forward(losses, stats, x, t, inv_t, rows, C, row_block_for(C));
}

void kl_div_rows_backward(float* dx, const float* x, const float* t, const float* stats, float inv_t, const float* upstream,
                          float over, int64_t rows, int64_t C) {
    kl_div_backward(dx, x, t, stats, inv_t, upstream, over, rows, C, row_block_for(C));
}

}  // namespace qdq::cuda
