// softmax(scale·x + mask) over rows of C, one block per row, and its backward, as the CPU
// kernels in autograd/ops/softmax.cpp (same arguments): mask_rows[r] is the offset of row r's
// additive mask in mask, or mask is null. Stable: the row max is subtracted first.
//   dx += scale · y ⊙ (dy − Σ_j dy_j·y_j)
#pragma once

#include <cstdint>
#include <stdexcept>

#include "cuda/kernels/block_reduce.cuh"

namespace qdq::cuda {

static __global__ void softmax_forward_rows(float* y, const float* x, const float* mask, const int64_t* mask_rows, float scale,
                                     int64_t C) {
    const int64_t r = blockIdx.x;
    const float* xr = x + r * C;
    float* yr = y + r * C;
    const float* mr = mask ? mask + mask_rows[r] : nullptr;
    float row_max = -INFINITY;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        yr[j] = scale * xr[j] + (mr ? mr[j] : 0.0f);
        row_max = fmaxf(row_max, yr[j]);
    }
    row_max = block_reduce(row_max, MaxOp{}, -INFINITY);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) {
        yr[j] = expf(yr[j] - row_max);
        sum += yr[j];
    }
    const float inv_sum = 1.0f / block_reduce(sum, SumOp{}, 0.0f);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) yr[j] *= inv_sum;
}

static __global__ void softmax_backward_rows(float* dx, const float* dy, const float* y, float scale, int64_t C) {
    const int64_t r = blockIdx.x;
    const float *dyr = dy + r * C, *yr = y + r * C;
    float* dxr = dx + r * C;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dot += dyr[j] * yr[j];
    dot = block_reduce(dot, SumOp{}, 0.0f);
    for (int64_t j = threadIdx.x; j < C; j += blockDim.x) dxr[j] += scale * yr[j] * (dyr[j] - dot);
}

inline void softmax_forward(float* y, const float* x, const float* mask, const int64_t* mask_rows, float scale,
                            int64_t rows, int64_t C, unsigned block = 128) {
    check_row_block(block, "softmax_forward");
    if (rows > 0) launch(softmax_forward_rows, dim3((unsigned)rows), dim3(block), y, x, mask, mask_rows, scale, C);
}

inline void softmax_backward(float* dx, const float* dy, const float* y, float scale, int64_t rows, int64_t C,
                             unsigned block = 128) {
    check_row_block(block, "softmax_backward");
    if (rows > 0) launch(softmax_backward_rows, dim3((unsigned)rows), dim3(block), dx, dy, y, scale, C);
}

}  // namespace qdq::cuda
