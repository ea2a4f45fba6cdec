// Gradient clipping's two passes on the device (optim/clip_grad.cpp): Σ x² of a gradient, each
// block's share in double into partial[block] (the caller sums the partials in block order, in
// double, then over the tensors), and x·scale in place.
#pragma once

#include <cstdint>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

static __global__ void sum_of_squares_blocks(double* partial, const float* x, int64_t n) {
    double sum = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        sum += (double)x[i] * (double)x[i];
    sum = block_reduce(sum, SumOp{}, 0.0);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// Blocks a launch of sum_of_squares uses for n elements: the size of `partial`. At most 1024
// (fewer on the host, kernel_compat.h), each thread then striding over the rest.
inline unsigned sum_of_squares_block_count(int64_t n, unsigned block) {
    const int64_t blocks = (n + block - 1) / block, most = kMaxGridStrideBlocks < 1024 ? kMaxGridStrideBlocks : 1024;
    return (unsigned)(blocks < 1 ? 1 : blocks < most ? blocks : most);
}

inline void sum_of_squares(double* partial, const float* x, int64_t n, unsigned block = 256) {
    check_row_block(block, "sum_of_squares");
    launch(sum_of_squares_blocks, dim3(sum_of_squares_block_count(n, block)), dim3(block), partial, x, n);
}

struct ScaleOp {
    float* x;
    float scale;
    __host__ __device__ void operator()(int64_t i) const { x[i] *= scale; }
};

}  // namespace qdq::cuda
