// Element-wise ops as functors for for_each (cuda/kernels/for_each.cuh), named and with the
// arguments of their CPU twins (autograd/ops/elementwise.cpp, activation.cpp).
//   gelu(x) = x·Φ(x), Φ(x) = ½·erfc(−x/√2),  gelu'(x) = Φ(x) + x·φ(x), φ(x) = e^{−x²/2}/√(2π)
// Φ from erfc keeps the far negative tail's relative accuracy, as the CPU kernel does.
#pragma once

#include <cstdint>

#include "cuda/kernels/for_each.cuh"

namespace qdq::cuda {

// out[i] = a[i] + b[i]
struct AddOp {
    float* out;
    const float* a;
    const float* b;
    __host__ __device__ void operator()(int64_t i) const { out[i] = a[i] + b[i]; }
};

// y[i] = a[i] + b[i mod nb]: b repeated over a's leading dims (a bias, position embeddings)
struct AddTrailingOp {
    float* y;
    const float* a;
    const float* b;
    int64_t nb;
    __host__ __device__ void operator()(int64_t i) const { y[i] = a[i] + b[i % nb]; }
};

// db[j] += Σ_k dy[k·nb + j] over the `repeats` copies, in order (add_trailing's backward to b)
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

__host__ __device__ inline float normal_cdf(float x) { return 0.5f * erfcf(-x * 0.707106781f); }

// y[i] = x[i] + s
struct AddScalarOp {
    float* y;
    const float* x;
    float s;
    __host__ __device__ void operator()(int64_t i) const { y[i] = x[i] + s; }
};

// y[i] = x[i]^e;  dx[i] += dy[i]·e·x^(e−1), 0 for e = 0 (x⁰ is constant, as PyTorch has it)
struct PowForwardOp {
    float* y;
    const float* x;
    float e;
    __host__ __device__ void operator()(int64_t i) const { y[i] = powf(x[i], e); }
};
struct PowBackwardOp {
    float* dx;
    const float* dy;
    const float* x;
    float e;
    __host__ __device__ void operator()(int64_t i) const { dx[i] += dy[i] * (e == 0.0f ? 0.0f : e * powf(x[i], e - 1.0f)); }
};

// y[i] = gelu(x[i])
struct GeluForwardOp {
    float* y;
    const float* x;
    __host__ __device__ void operator()(int64_t i) const { y[i] = x[i] * normal_cdf(x[i]); }
};

// dx[i] += dy[i] · gelu'(x[i])
struct GeluBackwardOp {
    float* dx;
    const float* dy;
    const float* x;
    __host__ __device__ void operator()(int64_t i) const {
        const float v = x[i];
        dx[i] += dy[i] * (normal_cdf(v) + v * expf(-0.5f * v * v) * 0.398942280f);
    }
};

}  // namespace qdq::cuda
