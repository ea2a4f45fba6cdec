// Element-wise work on the device: f(i) for every i in [0, n) by a grid-stride loop, f a
// __host__ __device__ functor holding its pointers. Grids stop at kMaxGridStrideBlocks
// (cuda/kernels/kernel_compat.h); each thread then takes several elements.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "cuda/kernels/kernel_compat.h"

namespace qdq::cuda {

template <typename F>
__global__ void for_each_kernel(int64_t n, F f) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) f(i);
}

template <typename F>
void for_each(int64_t n, F f, unsigned block = 256) {
    if (n == 0) return;
    if (block == 0 || block % 32 != 0) throw std::invalid_argument("for_each: the block size must be a multiple of 32");
    const int64_t blocks = (n + block - 1) / block;
    launch(for_each_kernel<F>, dim3((unsigned)(blocks < kMaxGridStrideBlocks ? blocks : kMaxGridStrideBlocks)), dim3(block), n, f);
}

}  // namespace qdq::cuda
