// Element-wise ops as functors for for_each (cuda/kernels/for_each.cuh), named and with the
// arguments of their CPU twins (autograd/ops/elementwise.cpp, scalar.cpp, activation.cpp).
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

// y[i] = value
struct FillOp {
    float* y;
    float value;
    __host__ __device__ void operator()(int64_t i) const { y[i] = value; }
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

// y[i] = x[i]·s;  with accumulate (backward), y[i] += x[i]·s
struct ScaleCopyOp {
    float* y;
    const float* x;
    float s;
    bool accumulate;
    __host__ __device__ void operator()(int64_t i) const { y[i] = accumulate ? y[i] + x[i] * s : x[i] * s; }
};

// y = tanh(x);  dx += dy·(1 − y²)
struct TanhForwardOp {
    float* y;
    const float* x;
    __host__ __device__ void operator()(int64_t i) const { y[i] = tanhf(x[i]); }
};
struct TanhBackwardOp {
    float* dx;
    const float* dy;
    const float* y;
    __host__ __device__ void operator()(int64_t i) const { dx[i] += dy[i] * (1.0f - y[i] * y[i]); }
};

}  // namespace qdq::cuda
