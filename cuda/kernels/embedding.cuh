// Embedding lookup and its backward, with the CPU op's arguments (autograd/ops/embedding.cpp):
// out[n, :] = weight[ids[n], :]; dweight[ids[n], :] += dout[n, :] unless ids[n] is padding_idx,
// by atomicAdd, so a repeated id gets every row's contribution (in an order the hardware picks: sums of repeated ids agree with
// the CPU's to float rounding, the rest exactly).
#pragma once

#include <cstdint>

#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

struct EmbeddingForwardOp {
    float* out;
    const float* weight;
    const int32_t* ids;
    int64_t C;
    __host__ __device__ void operator()(int64_t i) const { out[i] = weight[ids[i / C] * C + i % C]; }
};

struct EmbeddingBackwardOp {
    float* dweight;
    const float* dout;
    const int32_t* ids;
    int64_t C;
    int64_t padding_idx;
    __device__ void operator()(int64_t i) const {
        const int32_t id = ids[i / C];
        if (id != padding_idx) atomicAdd(dweight + id * C + i % C, dout[i]);
    }
};

}  // namespace qdq::cuda
