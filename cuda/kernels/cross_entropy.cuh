// Cross-entropy, log_softmax and distillation's KL by rows on the device, one block per row,
// with the CPU kernels' arithmetic (autograd/ops/cross_entropy.cpp): lse = m + s kept apart (m
// the row max, s = log Σ e^{x−m}),
//   loss_r = (m − x[label]) + s,   dx_r += scale·(softmax(x_r) − onehot(label_r)),
// ignored rows (label == ignore_index) give 0 and no gradient. The mean over the rows not
// ignored is summed in double in row order, as on the CPU, by one thread (rows_mean), and stays
// on the device as the loss. The backward's scale is (g·times)/over with g the loss's gradient,
// read where it lies on the device (upstream), in the CPU's order of operations.
#pragma once

#include <cstdint>

#include "cuda/kernels/block_reduce.cuh"

namespace qdq::cuda {

// A row's max m and s = log Σ e^{(x−m)·inv_t}, the lse of x·inv_t kept apart as m·inv_t + s.
static __device__ void row_lse(float* m_out, float* s_out, const float* row, float inv_t, int64_t C) {
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, row[j]);
    m = block_reduce(m, MaxOp{}, -INFINITY);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) sum += expf((row[j] - m) * inv_t);
    *m_out = m;
    *s_out = logf(block_reduce(sum, SumOp{}, 0.0f));
}

// The backward's factor (g·times)/over, 0 when over is 0 (no row counted).
static __device__ float upstream_scale(const float* upstream, float times, float over) {
    return over != 0.0f ? (*upstream * times) / over : 0.0f;
}

static __global__ void cross_entropy_forward_rows(float* losses, float* row_max, float* log_sum, const float* x,
                                                  const int32_t* labels, int32_t ignore_index, int64_t C) {
    const int64_t r = blockIdx.x;
    const float* xr = x + r * C;
    if (labels[r] == ignore_index) {  // the whole block takes this branch
        if (threadIdx.x == 0) losses[r] = row_max[r] = log_sum[r] = 0.0f;
        return;
    }
    float m, s;
    row_lse(&m, &s, xr, 1.0f, C);
    if (threadIdx.x == 0) {
        losses[r] = (m - xr[labels[r]]) + s;
        row_max[r] = m;
        log_sum[r] = s;
    }
}

static __global__ void cross_entropy_backward_rows(float* dx, const float* x, const float* row_max, const float* log_sum,
                                                   const int32_t* labels, int32_t ignore_index, const float* upstream,
                                                   float over, int64_t C) {
    const int64_t r = blockIdx.x;
    if (labels[r] == ignore_index) return;
    const float scale = upstream_scale(upstream, 1.0f, over);
    const float *xr = x + r * C;
    float* dxr = dx + r * C;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x)
        dxr[j] += scale * expf((xr[j] - row_max[r]) - log_sum[r]) - (j == labels[r] ? scale : 0.0f);
}

// Distillation's KL by rows (softmax_kl_div), with the CPU's arithmetic: each row's
// (m, s) of the student x and the teacher t kept in stats[4r..4r+3], log q_j = (x_j − m_x)/T − s_x
// and log p_j likewise, loss_r = Σ_j p_j·(log p_j − log q_j); backward dx_r += scale·(q − p).
static __global__ void kl_div_forward_rows(float* losses, float* stats, const float* x, const float* t, float inv_t,
                                           int64_t C) {
    const int64_t r = blockIdx.x;
    const float *xr = x + r * C, *tr = t + r * C;
    float mx, sx, mt, st;
    row_lse(&mx, &sx, xr, inv_t, C);
    row_lse(&mt, &st, tr, inv_t, C);
    float kl = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        const float log_p = (tr[j] - mt) * inv_t - st, log_q = (xr[j] - mx) * inv_t - sx;
        kl += expf(log_p) * (log_p - log_q);
    }
    kl = block_reduce(kl, SumOp{}, 0.0f);
    if (threadIdx.x == 0) {
        losses[r] = kl;
        stats[4 * r] = mx, stats[4 * r + 1] = sx, stats[4 * r + 2] = mt, stats[4 * r + 3] = st;
    }
}

static __global__ void kl_div_backward_rows(float* dx, const float* x, const float* t, const float* stats, float inv_t,
                                            const float* upstream, float over, int64_t C) {
    const int64_t r = blockIdx.x;
    const float scale = upstream_scale(upstream, inv_t, over);
    const float *xr = x + r * C, *tr = t + r * C, *sr = stats + 4 * r;
    float* dxr = dx + r * C;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x)
        dxr[j] += scale * (expf((xr[j] - sr[0]) * inv_t - sr[1]) - expf((tr[j] - sr[2]) * inv_t - sr[3]));
}

// log_softmax by rows (the CPU's autograd/ops/cross_entropy.cpp): y = (x − m) − s with m the
// row max and s = log Σ e^{x−m}; backward dx += dy − e^y·Σ dy.
static __global__ void log_softmax_forward_rows(float* y, const float* x, int64_t C) {
    const int64_t r = blockIdx.x;
    const float* xr = x + r * C;
    float m, s;
    row_lse(&m, &s, xr, 1.0f, C);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) y[r * C + j] = (xr[j] - m) - s;
}

static __global__ void log_softmax_backward_rows(float* dx, const float* dy, const float* y, int64_t C) {
    const int64_t r = blockIdx.x;
    const float *dyr = dy + r * C, *yr = y + r * C;
    float total = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) total += dyr[j];
    total = block_reduce(total, SumOp{}, 0.0f);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dx[r * C + j] += dyr[j] - expf(yr[j]) * total;
}

inline void log_softmax_forward(float* y, const float* x, int64_t rows, int64_t C, unsigned block = 128) {
    check_row_block(block, "log_softmax_forward");
    if (rows > 0) launch(log_softmax_forward_rows, dim3((unsigned)rows), dim3(block), y, x, C);
}

inline void log_softmax_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t C, unsigned block = 128) {
    check_row_block(block, "log_softmax_backward");
    if (rows > 0) launch(log_softmax_backward_rows, dim3((unsigned)rows), dim3(block), dx, dy, y, C);
}

inline void kl_div_forward(float* losses, float* stats, const float* x, const float* t, float inv_t, int64_t rows,
                           int64_t C, unsigned block = 128) {
    check_row_block(block, "kl_div_forward");
    if (rows > 0) launch(kl_div_forward_rows, dim3((unsigned)rows), dim3(block), losses, stats, x, t, inv_t, C);
}

inline void kl_div_backward(float* dx, const float* x, const float* t, const float* stats, float inv_t,
                            const float* upstream, float over, int64_t rows, int64_t C, unsigned block = 128) {
    check_row_block(block, "kl_div_backward");
    if (rows > 0) launch(kl_div_backward_rows, dim3((unsigned)rows), dim3(block), dx, x, t, stats, inv_t, upstream, over, C);
}

// mean = Σ losses / count, summed in double in row order by one thread: the CPU's value to the
// bit, left where the loss lives (no read back). A batch's rows are at most a few thousand.
static __global__ void rows_mean_serial(float* mean, const float* losses, int64_t rows, int64_t count) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r) total += losses[r];
    *mean = count ? (float)(total / (double)count) : 0.0f;
}

inline void rows_mean(float* mean, const float* losses, int64_t rows, int64_t count) {
    launch(rows_mean_serial, dim3(1), dim3(1), mean, losses, rows, count);
}

inline void cross_entropy_forward(float* losses, float* row_max, float* log_sum, const float* x, const int32_t* labels,
                                  int32_t ignore_index, int64_t rows, int64_t C, unsigned block = 128) {
    check_row_block(block, "cross_entropy_forward");
    if (rows > 0) launch(cross_entropy_forward_rows, dim3((unsigned)rows), dim3(block), losses, row_max, log_sum, x, labels, ignore_index, C);
}

inline void cross_entropy_backward(float* dx, const float* x, const float* row_max, const float* log_sum,
                                   const int32_t* labels, int32_t ignore_index, const float* upstream, float over,
                                   int64_t rows, int64_t C, unsigned block = 128) {
    check_row_block(block, "cross_entropy_backward");
    if (rows > 0)
        launch(cross_entropy_backward_rows, dim3((unsigned)rows), dim3(block), dx, x, row_max, log_sum, labels, ignore_index,
               upstream, over, C);
}

}  // namespace qdq::cuda
