// Sums along one axis on the device, the tensor seen as [outer, n, inner] (the CPU's
// autograd/ops/reduce.cpp): each output element's thread adds its n inputs in order, so the sum
// is the same whatever the grid; and the backward, each input taking its output's gradient.
// sum_all and mean_all are the case outer = inner = 1: one thread adds every element (correct
// at any size, fast only for the small tensors those ops see).
#pragma once

#include <cstdint>

#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

// y[o·inner + k] = scale · Σ_j x[(o·n + j)·inner + k], the sum in double
struct AxisSumOp {
    float* y;
    const float* x;
    int64_t n, inner;
    float scale;
    __host__ __device__ void operator()(int64_t e) const {
        const int64_t o = e / inner, k = e % inner;
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += (double)x[(o * n + j) * inner + k];
        y[e] = (float)(scale * sum);
    }
};

// dx[(o·n + j)·inner + k] += scale · dy[o·inner + k]
struct AxisSpreadOp {
    float* dx;
    const float* dy;
    int64_t n, inner;
    float scale;
    __host__ __device__ void operator()(int64_t i) const {
        const int64_t k = i % inner, o = i / (n * inner);
        dx[i] += scale * dy[o * inner + k];
    }
};

}  // namespace qdq::cuda
