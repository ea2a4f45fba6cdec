// LayerNorm over the last axis, one fused kernel each way (after llm.c's layernorm_forward /
// layernorm_backward). Per row of C values, with x̂ = (x − μ)·rstd, rstd = 1/√(σ² + eps),
// σ² biased as in PyTorch, y = x̂·γ + β:
//   dγ += Σ_rows dy·x̂,  dβ += Σ_rows dy,
//   dx = rstd·(dy·γ − mean(dy·γ) − x̂·mean(dy·γ·x̂)).
// Forward computes in double and rounds y once: μ, σ² (two passes) and every output, so y is the
// float nearest the exact value but for a double's rounding, whatever the CPU's vector width.
// A float forward rounded at every step, and each rounding that moved an output across a code's
// tie moved a code of the INT8 export's; ONNX Runtime's float LayerNormalization still parts from
// the exact value now and then, on its side (docs/BENCHMARKS.md).
// It saves μ and rstd per row as floats, so backward recomputes x̂ without another reduction.
// There rows are centred on their first value x₀: x − x₀ is exact for values of one magnitude,
// and μ is kept as μ − x₀. A row with a large mean and a small spread then keeps its
// precision; μ rounded to a float would not (its rounding, times rstd, lands in x̂).
// add_layer_norm normalizes x + residual, writing the sum once (backward needs it): BERT's
// "Add & Norm" without a separate add op; both addends receive dx.
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/vector_math.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 14;
// dγ and dβ sum over rows: each block of this many rows sums into its own partial, and the
// partials are added in block order, so the result does not depend on the thread count.
constexpr int64_t kBlockRows = 32;

// y [rows, C], mean [rows] (μ − x₀), rstd [rows] from x [rows, C], or from x + residual (then
// also written to sum [rows, C]) when residual is not null.
QDQ_VECTOR_KERNEL
void layernorm_forward(float* y, float* mean, float* rstd, float* sum, const float* x,
                       const float* residual, const float* gamma, const float* beta, float eps,
                       int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* in = x + r * C;
        if (residual) {
            float* s = sum + r * C;
            const float* res = residual + r * C;
#pragma omp simd
            for (int64_t j = 0; j < C; ++j) s[j] = in[j] + res[j];
            in = s;
        }
        double total = 0.0;
#pragma omp simd reduction(+ : total)
        for (int64_t j = 0; j < C; ++j) total += in[j];
        const double mu = total / (double)C;
        double squares = 0.0;  // two passes: Σ(x − μ)² does not cancel like Σx² − Cμ²
#pragma omp simd reduction(+ : squares)
        for (int64_t j = 0; j < C; ++j) squares += (in[j] - mu) * (in[j] - mu);
        const double rs = 1.0 / std::sqrt(squares / (double)C + (double)eps);
        float* yr = y + r * C;
#pragma omp simd
        for (int64_t j = 0; j < C; ++j) yr[j] = (float)((in[j] - mu) * rs * gamma[j] + beta[j]);
        mean[r] = (float)(mu - in[0]);
        rstd[r] = (float)rs;
    }
}

// For rows of in [rows, C] (the normalized input): dx [rows, C] += input gradient, and the same
// into dx2 when not null (add_layer_norm's second addend); dgamma [C], dbeta [C] += their sums.
// dx, dgamma and dbeta may each be null.
QDQ_VECTOR_KERNEL
void layernorm_backward(float* dx, float* dx2, float* dgamma, float* dbeta, const float* dy,
                        const float* in, const float* mean, const float* rstd,
                        const float* gamma, int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* dyr = dy + r * C;
        const float* inr = in + r * C;
        float x0 = inr[0], m = mean[r], rs = rstd[r];
        if (dgamma) {
#pragma omp simd
            for (int64_t j = 0; j < C; ++j) dgamma[j] += dyr[j] * ((inr[j] - x0) - m) * rs;
        }
        if (dbeta) {
#pragma omp simd
            for (int64_t j = 0; j < C; ++j) dbeta[j] += dyr[j];
        }
        if (!dx) continue;
        float dnorm_sum = 0.0f, dnorm_xhat_sum = 0.0f;
#pragma omp simd reduction(+ : dnorm_sum, dnorm_xhat_sum)
        for (int64_t j = 0; j < C; ++j) {
            float dnorm = dyr[j] * gamma[j];
            dnorm_sum += dnorm;
            dnorm_xhat_sum += dnorm * ((inr[j] - x0) - m) * rs;
        }
        // dx = rstd·dnorm − rstd·mean(dnorm) − (x − μ)·rstd²·mean(dnorm·x̂)
        float offset = -rs * dnorm_sum / (float)C;
        float slope = -rs * rs * dnorm_xhat_sum / (float)C;
        float* dxr = dx + r * C;
        if (dx2) {
            float* dx2r = dx2 + r * C;
#pragma omp simd
            for (int64_t j = 0; j < C; ++j) {
                float g = dyr[j] * gamma[j] * rs + ((inr[j] - x0) - m) * slope + offset;
                dxr[j] += g;
                dx2r[j] += g;
            }
        } else {
#pragma omp simd
            for (int64_t j = 0; j < C; ++j)
                dxr[j] += dyr[j] * gamma[j] * rs + ((inr[j] - x0) - m) * slope + offset;
        }
    }
}

void backward_rows(const Tensor& gy, const Tensor& in, const Tensor& mean, const Tensor& rstd,
                   const Tensor& x, const Tensor& residual, const Tensor& gamma,
                   const Tensor& beta) {
    int64_t C = in.size(-1), rows = in.numel() / C;
    // The kernel fills dx first and mirrors it into dx2, so pack the non-null ones first.
    float* dx = grad_data_or_null(x);
    float* dx2 = grad_data_or_null(residual);
    if (!dx) std::swap(dx, dx2);
    float* dgamma = grad_data_or_null(gamma);
    float* dbeta = grad_data_or_null(beta);
    int64_t blocks = (rows + kBlockRows - 1) / kBlockRows;
    std::vector<float> partials;
    if (dgamma || dbeta) partials.assign((size_t)(blocks * 2 * C), 0.0f);
    const float* g = gy.f32();
    const float* pin = in.f32();
    const float* pgamma = gamma.f32();
    parallel_for(blocks, std::max<int64_t>(1, kGrain / (kBlockRows * C)),
                 [&](int64_t b0, int64_t b1) {
                     for (int64_t b = b0; b < b1; ++b) {
                         int64_t r0 = b * kBlockRows, n = std::min(kBlockRows, rows - r0);
                         float* part = partials.empty() ? nullptr : partials.data() + b * 2 * C;
                         layernorm_backward(dx ? dx + r0 * C : nullptr,
                                            dx2 ? dx2 + r0 * C : nullptr,
                                            dgamma ? part : nullptr, dbeta ? part + C : nullptr,
                                            g + r0 * C, pin + r0 * C, mean.f32() + r0,
                                            rstd.f32() + r0, pgamma, n, C);
                     }
                 });
    for (int64_t b = 0; b < (int64_t)partials.size() / (2 * C); ++b) {
        const float* part = partials.data() + b * 2 * C;
        if (dgamma)
            for (int64_t j = 0; j < C; ++j) dgamma[j] += part[j];
        if (dbeta)
            for (int64_t j = 0; j < C; ++j) dbeta[j] += part[C + j];
    }
}

// A gradient buffer the device kernels can write: the tensor's, or a scratch where it needs none.
Tensor device_grad_or_scratch(const Tensor& t, const Shape& shape) {
    return t.defined() && t.requires_grad() ? t.grad_buffer() : zeros(shape, DType::F32, Device::CUDA);
}

// The device path (cuda/kernels/layernorm.cuh): the same arithmetic.
Tensor layer_norm_cuda(const Tensor& x, const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps) {
    const int64_t C = x.size(-1), rows = x.numel() / C;
    Tensor y = empty(x.shape(), DType::F32, Device::CUDA), mean = empty({rows}, DType::F32, Device::CUDA);
    Tensor rstd = empty({rows}, DType::F32, Device::CUDA);
    Tensor in = residual.defined() ? empty(x.shape(), DType::F32, Device::CUDA) : x;  // what was normalized
    cuda::layernorm_rows_forward(y.f32(), mean.f32(), rstd.f32(), residual.defined() ? in.f32() : nullptr, x.f32(),
                                 residual.defined() ? residual.f32() : nullptr, gamma.f32(), beta.f32(), eps, rows, C);
    if (needs_grad({x, residual, gamma, beta}))
        record(y, {x, residual, gamma, beta}, [in, mean, rstd, x, residual, gamma, beta, rows, C](const Tensor& gy) {
            Tensor gx = device_grad_or_scratch(x, x.shape());
            float* gres = residual.defined() && residual.requires_grad() ? residual.grad_buffer().f32() : nullptr;
            cuda::layernorm_rows_backward(gx.f32(), gres, device_grad_or_scratch(gamma, {C}).f32(),
                                          device_grad_or_scratch(beta, {C}).f32(), gy.f32(), in.f32(), mean.f32(),
                                          rstd.f32(), gamma.f32(), rows, C);
        });
    return y;
}

Tensor layer_norm_impl(const char* op, const Tensor& x, const Tensor& residual,
                       const Tensor& gamma, const Tensor& beta, float eps) {
    std::string name(op);
    check(x.defined() && x.dtype() == DType::F32 && x.dim() >= 1 && x.size(-1) > 0,
          name + ": x must be a float32 tensor with a non-empty last dim");
    for (const Tensor* p : {&gamma, &beta})
        check(p->defined() && p->dtype() == DType::F32 && p->shape() == Shape{x.size(-1)},
              name + ": gamma and beta must be float32 [" + std::to_string(x.size(-1)) + "]");
    if (residual.defined()) check_same_shape(x, residual, op);
    check(eps >= 0.0f, name + ": eps must be non-negative");
    check_same_device(op, {x, residual, gamma, beta});
    if (x.is_cuda()) return layer_norm_cuda(x, residual, gamma, beta, eps);
    int64_t C = x.size(-1), rows = x.numel() / C;
    check(!residual.defined() || residual.dtype() == DType::F32, name + ": residual must be float32");

    Tensor y = empty(x.shape()), mean = empty({rows}), rstd = empty({rows});
    Tensor in = residual.defined() ? empty(x.shape()) : x;  // what was normalized
    float* py = y.f32();
    float* psum = residual.defined() ? in.f32() : nullptr;
    const float* px = x.f32();
    const float* pres = residual.defined() ? residual.f32() : nullptr;
    parallel_for(rows, std::max<int64_t>(1, kGrain / C), [&](int64_t begin, int64_t end) {
        layernorm_forward(py + begin * C, mean.f32() + begin, rstd.f32() + begin,
                          psum ? psum + begin * C : nullptr, px + begin * C,
                          pres ? pres + begin * C : nullptr, gamma.f32(), beta.f32(), eps,
                          end - begin, C);
    });
    if (needs_grad({x, residual, gamma, beta}))
        record(y, {x, residual, gamma, beta}, [in, mean, rstd, x, residual, gamma, beta](const Tensor& gy) {
            backward_rows(gy, in, mean, rstd, x, residual, gamma, beta);
        });
    return y;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps) {
    return layer_norm_impl("layer_norm", x, Tensor(), gamma, beta, eps);
}

Tensor add_layer_norm(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                      const Tensor& beta, float eps) {
    check(residual.defined(), "add_layer_norm: residual is undefined");
    return layer_norm_impl("add_layer_norm", x, residual, gamma, beta, eps);
}

}  // namespace qdq
