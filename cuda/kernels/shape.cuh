// Data movement on the device, with the CPU ops' plans (autograd/ops/shape.cpp):
//   a permuted copy (split_heads, merge_heads, transpose): output element i reads the input at
//   Σ_d idx_d(i)·src_strides[d], idx the output's mixed-radix digits; its backward adds back
//   through the same map, one-to-one, so no two threads write one element;
//   a block of `len` positions along an axis, the tensor seen as [outer, n, inner] (slice, concat
//   and their backwards), copied or added;
//   floats to bf16 bits, a bf16 GEMM's operands on their way to cuBLAS.
#pragma once

#include <cstdint>

#include "cuda/bf16_math.h"
#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

constexpr int kMaxPermuteDims = 6;

struct PermuteCopyOp {
    float* y;
    const float* x;
    int dims;
    int64_t out_shape[kMaxPermuteDims], src_strides[kMaxPermuteDims];
    bool accumulate;  // false: y[i] = x[src(i)];  true (backward): x[src(i)] += y[i]
    __host__ __device__ void operator()(int64_t i) const {
        int64_t rest = i, src = 0;
        for (int d = dims - 1; d >= 0; --d) {
            src += rest % out_shape[d] * src_strides[d];
            rest /= out_shape[d];
        }
        if (accumulate) const_cast<float*>(x)[src] += y[i];
        else y[i] = x[src];
    }
};

// dst[o, dst_start + k, j] = (or +=) src[o, src_start + k, j] for k < len, j < inner
struct AxisBlockOp {
    float* dst;
    const float* src;
    int64_t dst_n, dst_start, src_n, src_start, len, inner;
    bool accumulate;
    __host__ __device__ void operator()(int64_t e) const {
        const int64_t run = len * inner, o = e / run, k = e % run;
        float& d = dst[(o * dst_n + dst_start) * inner + k];
        const float s = src[(o * src_n + src_start) * inner + k];
        if (accumulate) d += s;
        else d = s;
    }
};

// out[i] = x[i]'s bf16 bits (cuda/bf16_math.h): a bf16 GEMM's operand, converted for cuBLAS.
struct ToBf16Op {
    uint16_t* out;
    const float* x;
    __host__ __device__ void operator()(int64_t i) const { out[i] = bf16_bits(x[i]); }
};

}  // namespace qdq::cuda
