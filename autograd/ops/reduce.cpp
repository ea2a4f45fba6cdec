// sum and mean over one axis or over every element.
// Sums accumulate in double: a float running sum of n terms can be off by n·2⁻²⁴ relative,
// 0.6% for the ~10^5 terms of a batch loss. An axis reduction sees its input as
// [outer, n, inner] with n the reduced axis, which covers every axis without transposing.
#include <algorithm>

#include "autograd/ops.h"
#include "autograd/ops/axis.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;

// Σ x[0, n). Eight independent partial sums vectorise; a single running sum would not,
// since the compiler may not reorder float additions.
double sum_contiguous(const float* x, int64_t n) {
    double lanes[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) lanes[k] += x[i + k];
    double s = 0;
    for (; i < n; ++i) s += x[i];
    for (double lane : lanes) s += lane;
    return s;
}

// Fixed-size blocks rather than one block per thread, so the rounding (and the result)
// does not depend on the thread count.
double sum_all_contiguous(const float* x, int64_t n) {
    int64_t blocks = (n + kGrain - 1) / kGrain;
    std::vector<double> partial((size_t)blocks);
    parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b)
            partial[(size_t)b] = sum_contiguous(x + b * kGrain, std::min(kGrain, n - b * kGrain));
    });
    double s = 0;
    for (double p : partial) s += p;
    return s;
}

// y[o, i] = Σ_k x[o, k, i] / divisor      x [outer, n, inner], y [outer, inner]
void reduce_axis_forward(float* y, const float* x, AxisSplit s, double divisor) {
    int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(s.n, 1));
    if (s.inner == 1) {
        parallel_for(s.outer, grain, [&](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o)
                y[o] = (float)(sum_contiguous(x + o * s.n, s.n) / divisor);
        });
        return;
    }
    // k outermost, so the innermost loop runs over contiguous i. A chunk of outputs may
    // straddle rows of o: it is walked as segments, each within one o.
    parallel_for(s.outer * s.inner, grain, [&](int64_t begin, int64_t end) {
        std::vector<double> acc((size_t)(end - begin), 0.0);
        for (int64_t j = begin; j < end;) {
            int64_t o = j / s.inner, i0 = j % s.inner;
            int64_t len = std::min(s.inner - i0, end - j);
            double* a = acc.data() + (j - begin);
            const float* xo = x + o * s.n * s.inner + i0;
            for (int64_t k = 0; k < s.n; ++k) {
                const float* xk = xo + k * s.inner;
                for (int64_t i = 0; i < len; ++i) a[i] += xk[i];
            }
            for (int64_t i = 0; i < len; ++i) y[j + i] = (float)(a[i] / divisor);
            j += len;
        }
    });
}

// dx[o, k, i] += dy[o, i] / divisor
void reduce_axis_backward(float* gx, const float* gy, AxisSplit s, float divisor) {
    int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(s.inner, 1));
    // Over rows (o, k) of dx; a chunk is walked as segments of k within one o.
    parallel_for(s.outer * s.n, grain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end;) {
            int64_t rows = std::min(s.n - r % s.n, end - r);
            const float* g = gy + (r / s.n) * s.inner;
            float* d = gx + r * s.inner;
            if (s.inner == 1) {
                float g0 = g[0] / divisor;
                for (int64_t k = 0; k < rows; ++k) d[k] += g0;
            } else {
                for (int64_t k = 0; k < rows; ++k)
                    for (int64_t i = 0; i < s.inner; ++i) d[k * s.inner + i] += g[i] / divisor;
            }
            r += rows;
        }
    });
}

// The device path of both reductions (cuda/kernels/reduce.cuh): x seen as [outer, n, inner].
Tensor reduce_cuda(const Tensor& a, const AxisSplit& s, const Shape& shape, float divisor) {
    Tensor y = empty(shape, DType::F32, Device::CUDA);
    cuda::axis_sum(y.f32(), a.f32(), s.outer, s.n, s.inner, 1.0f / divisor);
    if (needs_grad({a}))
        record(y, {a}, [a, s, divisor](const Tensor& gy) {
            cuda::axis_spread(a.grad_buffer().f32(), gy.f32(), s.outer, s.n, s.inner, 1.0f / divisor);
        });
    return y;
}

Tensor reduce_axis(const Tensor& a, int64_t axis, bool keepdim, bool average, const char* name) {
    int64_t ax = normalize_axis(name, axis, a.shape());
    AxisSplit s = split_at_axis(a.shape(), ax);
    Shape shape = a.shape();
    if (keepdim)
        shape[(size_t)ax] = 1;
    else
        shape.erase(shape.begin() + ax);
    float divisor = average ? (float)s.n : 1.0f;
    if (a.is_cuda()) return reduce_cuda(a, s, shape, divisor);
    Tensor y = empty(shape);
    reduce_axis_forward(y.f32(), a.f32(), s, divisor);
    if (needs_grad({a}))
        record(y, {a}, [a, s, divisor](const Tensor& gy) {
            reduce_axis_backward(a.grad_buffer().f32(), gy.f32(), s, divisor);
        });
    return y;
}

Tensor reduce_all(const Tensor& a, bool average) {
    int64_t n = a.numel();
    float divisor = average ? (float)n : 1.0f;
    if (a.is_cuda()) return reduce_cuda(a, AxisSplit{1, n, 1}, {}, divisor);
    Tensor y = empty({});
    *y.f32() = (float)(sum_all_contiguous(a.f32(), n) / divisor);
    if (needs_grad({a}))
        record(y, {a}, [a, n, divisor](const Tensor& gy) {
            float g = *gy.f32() / divisor;
            float* gx = a.grad_buffer().f32();
            parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) gx[i] += g;
            });
        });
    return y;
}

}  // namespace

Tensor sum(const Tensor& a, int64_t axis, bool keepdim) {
    return reduce_axis(a, axis, keepdim, false, "sum");
}
Tensor mean(const Tensor& a, int64_t axis, bool keepdim) {
    return reduce_axis(a, axis, keepdim, true, "mean");
}
Tensor sum_all(const Tensor& a) { return reduce_all(a, false); }
Tensor mean_all(const Tensor& a) { return reduce_all(a, true); }

}  // namespace qdq
