// A reduction over one block's threads, every thread getting the result: within each warp by
// butterfly shuffles, then the warps' partial results through shared memory, reduced again by
// every warp. The block size must be a multiple of 32 (at most 1024), which the launchers of
// row kernels check; every thread of the block must call it.
#pragma once

#include <stdexcept>
#include <string>

#include "cuda/kernels/kernel_compat.h"

namespace qdq::cuda {

struct SumOp {
    template <typename T>
    __host__ __device__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {
    __host__ __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <typename T, typename Op>
__device__ T warp_reduce(T v, Op op) {
    for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

template <typename T, typename Op>
__device__ T block_reduce(T v, Op op, T identity) {
    __shared__ T partial[32];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_reduce(v, op);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = warp_reduce(lane < blockDim.x / 32 ? partial[lane] : identity, op);
    __syncthreads();  // partial is written again by the next call
    return v;
}

// The block the backend gives a row kernel: a thread per column, rounded up to a whole warp, at
// most 128, so that a short row (BERT-mini's 16 attention positions) does not idle most of a block.
inline unsigned row_block_for(int64_t C) { return C >= 128 ? 128u : (unsigned)((C + 31) / 32 * 32 + (C == 0) * 32); }

// The launchers of row kernels check their block size with this.
inline void check_row_block(unsigned block, const char* what) {
    if (block == 0 || block % 32 != 0 || block > 1024)
        throw std::invalid_argument(std::string(what) + ": the block size must be a multiple of 32, at most 1024");
}

}  // namespace qdq::cuda
