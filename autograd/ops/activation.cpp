// GELU (exact erf form, BERT's "gelu") and tanh.
//   gelu(x) = x·Φ(x), Φ(x) = ½(1 + erf(x/√2)),  gelu'(x) = Φ(x) + x·φ(x), φ(x) = e^{−x²/2}/√(2π)
#include <cmath>

#include "autograd/ops.h"
#include "autograd/ops/vector_math.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 14;

// Φ(x) given e = e^{−x²/2}. Near 0 from erf's series; elsewhere from erfc(|x|/√2), which is
// e·erfc_scaled: for x < 0 that is Φ itself, so the far negative tail keeps its relative
// accuracy instead of becoming 1 + erf ≈ 1 − 1 (as with std::erf, or in PyTorch).
inline float normal_cdf(float x, float e) {
    constexpr float kSqrtHalf = 0.707106781f;
    float t = std::fabs(x) * kSqrtHalf;
    float near_zero = 0.5f + 0.5f * std::copysign(vmath::erf_near_zero(t), x);
    float half_erfc = 0.5f * e * vmath::erfc_scaled(t);
    float far = x < 0.0f ? half_erfc : 1.0f - half_erfc;
    return t < vmath::kErfSplit ? near_zero : far;
}

// y [n] = gelu(x [n])
QDQ_VECTOR_KERNEL
void gelu_forward(float* y, const float* x, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        float e = vmath::exp_approx(-0.5f * x[i] * x[i]);
        y[i] = x[i] * normal_cdf(x[i], e);
    }
}

// dx [n] += dy [n] · gelu'(x [n])
QDQ_VECTOR_KERNEL
void gelu_backward(float* dx, const float* dy, const float* x, int64_t n) {
    constexpr float kInvSqrt2Pi = 0.398942280f;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
        float e = vmath::exp_approx(-0.5f * x[i] * x[i]);
        dx[i] += dy[i] * (normal_cdf(x[i], e) + x[i] * e * kInvSqrt2Pi);
    }
}

// std::tanh per element, unvectorized: BERT applies tanh only in the pooler, to one [B, hidden]
// row per sequence, which is too little work to justify another approximation.
void tanh_forward(float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

// dx [n] += dy [n] · (1 − y²), y = tanh(x) [n]
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * (1.0f - y[i] * y[i]);
}

void check_float(const Tensor& x, const char* op) {
    if (!x.defined() || x.dtype() != DType::F32) throw std::runtime_error(std::string(op) + ": x must be float32");
}

// The device path: the same function on the GPU (cuda/kernels/elementwise.cuh).
Tensor gelu_cuda(const Tensor& x) {
    Tensor y = empty(x.shape(), DType::F32, Device::CUDA);
    cuda::gelu_forward(y.f32(), x.f32(), x.numel());
    if (needs_grad({x}))
        record(y, {x}, [x](const Tensor& gy) { cuda::gelu_backward(x.grad_buffer().f32(), gy.f32(), x.f32(), x.numel()); });
    return y;
}

}  // namespace

Tensor gelu(const Tensor& x) {
    if (x.defined() && x.dtype() == DType::F32 && x.is_cuda()) return gelu_cuda(x);
    check_float(x, "gelu");
    Tensor y = empty(x.shape());
    float* py = y.f32();
    const float* px = x.f32();
    parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
        gelu_forward(py + begin, px + begin, end - begin);
    });
    if (needs_grad({x}))
        record(y, {x}, [x](const Tensor& gy) {
            float* gx = x.grad_buffer().f32();
            const float* g = gy.f32();
            const float* px = x.f32();
            parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
                gelu_backward(gx + begin, g + begin, px + begin, end - begin);
            });
        });
    return y;
}

Tensor tanh(const Tensor& x) {
    if (x.defined() && x.dtype() == DType::F32 && x.is_cuda()) {
        Tensor y = empty(x.shape(), DType::F32, Device::CUDA);
        cuda::tanh_forward(y.f32(), x.f32(), x.numel());
        if (needs_grad({x}))
            record(y, {x}, [x, y](const Tensor& gy) { cuda::tanh_backward(x.grad_buffer().f32(), gy.f32(), y.f32(), x.numel()); });
        return y;
    }
    check_float(x, "tanh");
    Tensor y = empty(x.shape());
    float* py = y.f32();
    const float* px = x.f32();
    parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
        tanh_forward(py + begin, px + begin, end - begin);
    });
    if (needs_grad({x}))
        record(y, {x}, [x, y](const Tensor& gy) {
            float* gx = x.grad_buffer().f32();
            const float* g = gy.f32();
            const float* py = y.f32();
            parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
                tanh_backward(gx + begin, g + begin, py + begin, end - begin);
            });
        });
    return y;
}

}  // namespace qdq
