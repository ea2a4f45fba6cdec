// add_scalar, mul_scalar, pow_scalar: elementwise ops with a constant operand.
#include <cmath>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;

// y[i] = f(x[i])
template <typename F>
Tensor map_forward(const Tensor& x, F f) {
    Tensor y = empty(x.shape());
    float* py = y.f32();
    const float* px = x.f32();
    parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) py[i] = f(px[i]);
    });
    return y;
}

// dx[i] += dy[i] · f'(x[i]), with dfdx(x) giving f'(x)
template <typename D>
void map_backward(const Tensor& x, const Tensor& gy, D dfdx) {
    float* gx = x.grad_buffer().f32();
    const float* px = x.f32();
    const float* g = gy.f32();
    parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) gx[i] += g[i] * dfdx(px[i]);
    });
}

}  // namespace

Tensor add_scalar(const Tensor& a, float s) {
    if (a.defined() && a.is_cuda()) {
        Tensor y = empty(a.shape(), DType::F32, Device::CUDA);
        cuda::add_scalar(y.f32(), a.f32(), s, a.numel());
        if (needs_grad({a})) record(y, {a}, [a](const Tensor& gy) { add_inplace(a.grad_buffer(), gy); });
        return y;
    }
    Tensor y = map_forward(a, [s](float x) { return x + s; });
    if (needs_grad({a}))
        record(y, {a}, [a](const Tensor& gy) { add_inplace(a.grad_buffer(), gy); });
    return y;
}

Tensor mul_scalar(const Tensor& a, float s) {
    if (a.defined() && a.is_cuda()) {
        Tensor y = empty(a.shape(), DType::F32, Device::CUDA);
        cuda::scale_copy(y.f32(), a.f32(), s, false, a.numel());
        if (needs_grad({a}))
            record(y, {a}, [a, s](const Tensor& gy) { cuda::scale_copy(a.grad_buffer().f32(), gy.f32(), s, true, a.numel()); });
        return y;
    }
    Tensor y = map_forward(a, [s](float x) { return x * s; });
    if (needs_grad({a}))
        record(y, {a}, [a, s](const Tensor& gy) {
            float* gx = a.grad_buffer().f32();
            const float* g = gy.f32();
            parallel_for(a.numel(), kGrain, [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) gx[i] += s * g[i];
            });
        });
    return y;
}

Tensor pow_scalar(const Tensor& a, float exponent) {
    if (a.defined() && a.is_cuda()) {
        Tensor y = empty(a.shape(), DType::F32, Device::CUDA);
        cuda::pow_forward(y.f32(), a.f32(), exponent, a.numel());
        if (needs_grad({a}))
            record(y, {a}, [a, exponent](const Tensor& gy) {
                cuda::pow_backward(a.grad_buffer().f32(), gy.f32(), a.f32(), exponent, a.numel());
            });
        return y;
    }
    Tensor y = map_forward(a, [exponent](float x) { return std::pow(x, exponent); });
    if (needs_grad({a}))
        record(y, {a}, [a, exponent](const Tensor& gy) {
            // x⁰ is constant: its derivative is 0 everywhere, where the general formula would
            // give 0·x⁻¹ = NaN at x = 0 (PyTorch special-cases it the same way).
            map_backward(a, gy, [exponent](float x) {
                return exponent == 0.0f ? 0.0f : exponent * std::pow(x, exponent - 1.0f);
            });
        });
    return y;
}

}  // namespace qdq
