// Gradient clipping's two passes on the device (optim/clip_grad.cpp), many gradients a launch
// (cuda/kernels/tensor_batch.cuh): Σ x² of each, each block's share in double into its slot of
// partial (the caller sums a gradient's partials in block order, in double, then over the
// gradients), and x·scale in place.
#pragma once

#include <cstdint>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/for_each.cuh"
#include "cuda/kernels/tensor_batch.cuh"

namespace qdq::cuda {

__device__ inline double block_sum_of_squares(const float* x, int64_t n, unsigned block, unsigned blocks) {
    double sum = 0;
    for (int64_t i = block * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)blocks * blockDim.x)
        sum += (double)x[i] * (double)x[i];
    return block_reduce(sum, SumOp{}, 0.0);
}

// Each array of the batch by its own sum_of_squares_block_count blocks, their sums one after
// another in partial.
static __global__ void sum_of_squares_batch_blocks(double* partial, TensorBatch<const float*> batch) {
    const BatchBlock b = batch_block(batch);
    const double sum = block_sum_of_squares(batch.item[b.tensor], batch.n[b.tensor], b.block, b.blocks);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

// Blocks the sum of squares of n elements takes: its share of `partial`. At most 1024
// (fewer on the host, kernel_compat.h), each thread then striding over the rest.
inline unsigned sum_of_squares_block_count(int64_t n, unsigned block) {
    const int64_t blocks = (n + block - 1) / block, most = kMaxGridStrideBlocks < 1024 ? kMaxGridStrideBlocks : 1024;
    return (unsigned)(blocks < 1 ? 1 : blocks < most ? blocks : most);
}

// Σ x² of every array with elements, in launches of a batch each: array k's partials
// begin at partial[Σ_{j<k} sum_of_squares_block_count(n[j])] (empty arrays have none).
inline void sums_of_squares_batched(double* partial, const std::vector<const float*>& x, const std::vector<int64_t>& n,
                                    unsigned block = 256) {
    check_row_block(block, "sums_of_squares_batched");
    for_each_batch(x, n, [block](int64_t count) { return sum_of_squares_block_count(count, block); },
                   [&](const TensorBatch<const float*>& batch, size_t first) {
                       launch(sum_of_squares_batch_blocks, dim3(batch.first_block[batch.count]), dim3(block),
                              partial + first, batch);
                   });
}

struct ScaleOp {
    float* x;
    float scale;
    __host__ __device__ void operator()(int64_t i) const { x[i] *= scale; }
};

}  // namespace qdq::cuda
