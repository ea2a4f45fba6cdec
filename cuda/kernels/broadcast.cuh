// Binary element-wise ops with numpy broadcasting on the device (add, sub, mul, div; the CPU's
// in autograd/ops/elementwise.cpp). add's common case, b of a's trailing dims (a bias), has
// kernels of its own; any other broadcast, dims ≤ 6, reads both inputs through strides over the
// output's shape, 0 along the dims where they repeat.
//   forward: output element i reads a and b at the offsets its digits give;
//   backward of an input x: each thread owns one element j of x and sums, in a fixed order,
//   the op's partial derivative times dy over every output element that read x[j], so no two
//   threads write one element and the sum does not depend on scheduling.
#pragma once

#include <cstdint>

#include "cuda/broadcast_shape.h"
#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

// y[i] = a[i] + b[i mod nb]: b repeated over a's leading dims (a bias, position embeddings)
struct AddTrailingOp {
    float* y;
    const float* a;
    const float* b;
    int64_t nb;
    __host__ __device__ void operator()(int64_t i) const { y[i] = a[i] + b[i % nb]; }
};

// y[i] = b[i mod nb]: b repeated (linear's bias, before its product adds to it)
struct RepeatTrailingOp {
    float* y;
    const float* b;
    int64_t nb;
    __host__ __device__ void operator()(int64_t i) const { y[i] = b[i % nb]; }
};

// add_trailing's backward to b sums `repeats` copies of each of nb columns. Many copies (a
// bias's rows) are summed by blocks of this many, a thread per (block, column), and the blocks'
// sums added in order: one thread per column summing every row left most of a GPU idle.
constexpr int64_t kRepeatBlock = 32;

// db[j] += Σ_k dy[k·nb + j] over every copy, in order (the blocks' partials are such copies too)
struct SumRepeatsOp {
    float* db;
    const float* dy;
    int64_t nb, repeats;
    __host__ __device__ void operator()(int64_t j) const {
        float sum = 0.0f;
        for (int64_t k = 0; k < repeats; ++k) sum += dy[k * nb + j];
        db[j] += sum;
    }
};

// partials[b·nb + j] = Σ dy[k·nb + j] over block b's copies, in order
struct RepeatPartialsOp {
    float* partials;
    const float* dy;
    int64_t nb, repeats;
    __host__ __device__ void operator()(int64_t i) const {
        const int64_t b = i / nb, j = i % nb, k0 = b * kRepeatBlock;
        const int64_t k1 = k0 + kRepeatBlock < repeats ? k0 + kRepeatBlock : repeats;
        float sum = 0.0f;
        for (int64_t k = k0; k < k1; ++k) sum += dy[k * nb + j];
        partials[i] = sum;
    }
};

__host__ __device__ inline float binary_value(int kind, float a, float b) {
    return kind == kBinaryAdd ? a + b : kind == kBinarySub ? a - b : kind == kBinaryMul ? a * b : a / b;
}

// ∂(a ∘ b)/∂a (which = 0) or ∂/∂b (which = 1)
__host__ __device__ inline float binary_partial(int kind, int which, float a, float b) {
    if (kind == kBinaryAdd) return 1.0f;
    if (kind == kBinarySub) return which == 0 ? 1.0f : -1.0f;
    if (kind == kBinaryMul) return which == 0 ? b : a;
    return which == 0 ? 1.0f / b : -a / (b * b);
}

struct BroadcastBinaryOp {
    float* y;
    const float* a;
    const float* b;
    BroadcastShape s;
    int kind;
    __host__ __device__ void operator()(int64_t i) const {
        int64_t rest = i, ia = 0, ib = 0;
        for (int d = s.dims - 1; d >= 0; --d) {
            const int64_t digit = rest % s.out[d];
            rest /= s.out[d];
            ia += digit * s.a_strides[d];
            ib += digit * s.b_strides[d];
        }
        y[i] = binary_value(kind, a[ia], b[ib]);
    }
};

// dx[j] += Σ over the outputs that read x[j] of partial · dy, x = a (which 0) or b (which 1)
struct BroadcastBinaryGradOp {
    float* dx;
    const float* dy;
    const float* a;
    const float* b;
    BroadcastShape s;
    int kind, which;
    __host__ __device__ void operator()(int64_t j) const {
        const int64_t* x_strides = which == 0 ? s.a_strides : s.b_strides;
        // x's own digits of j (a repeated dim has one position), and the count of repeats
        int64_t digits[kMaxBroadcastDims], rest = j, repeats = 1;
        for (int d = s.dims - 1; d >= 0; --d) {
            const bool repeated = x_strides[d] == 0;
            digits[d] = repeated ? 0 : rest % s.out[d];
            if (!repeated) rest /= s.out[d];
            else repeats *= s.out[d];
        }
        float sum = 0.0f;
        for (int64_t r = 0; r < repeats; ++r) {
            int64_t left = r, out_index = 0, stride = 1, ia = 0, ib = 0;
            for (int d = s.dims - 1; d >= 0; --d) {
                int64_t digit = digits[d];
                if (x_strides[d] == 0) {
                    digit = left % s.out[d];
                    left /= s.out[d];
                }
                out_index += digit * stride;
                stride *= s.out[d];
                ia += digit * s.a_strides[d];
                ib += digit * s.b_strides[d];
            }
            sum += dy[out_index] * binary_partial(kind, which, a[ia], b[ib]);
        }
        dx[j] += sum;
    }
};

}  // namespace qdq::cuda
