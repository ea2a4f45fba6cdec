// Inverted dropout: y = x·mask/(1 − p), mask_i = [hashed_uniform(key, i) >= p] for one key drawn
// per call. Element i's decision depends only on (key, i), so the mask is the same whatever the
// thread count or chunking, and backward recomputes it from the key instead of storing it.
#include "autograd/ops.h"
#include "autograd/ops/vector_math.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;

// y [begin, end) = x·scale where kept, else 0 (pointers are to element 0)
QDQ_VECTOR_KERNEL
void dropout_forward(float* y, const float* x, uint64_t key, float p, float scale, int64_t begin,
                     int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
        y[i] = hashed_uniform(key, (uint64_t)i) < p ? 0.0f : x[i] * scale;
}

// dx [begin, end) += dy·scale where kept
QDQ_VECTOR_KERNEL
void dropout_backward(float* dx, const float* dy, uint64_t key, float p, float scale,
                      int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
        dx[i] += hashed_uniform(key, (uint64_t)i) < p ? 0.0f : dy[i] * scale;
}

// The device path: the same mask for the key (cuda/kernels/dropout.cuh).
Tensor dropout_cuda(const Tensor& x, uint64_t key, float p, float scale) {
    Tensor y = empty(x.shape(), DType::F32, Device::CUDA);
    cuda::dropout_forward(y.f32(), x.f32(), key, p, scale, x.numel());
    if (needs_grad({x}))
        record(y, {x}, [x, key, p, scale](const Tensor& gy) {
            cuda::dropout_backward(x.grad_buffer().f32(), gy.f32(), key, p, scale, x.numel());
        });
    return y;
}

}  // namespace

Tensor dropout(const Tensor& x, float p, bool training, Rng& rng) {
    check(p >= 0.0f && p < 1.0f, "dropout: p must be in [0, 1), got " + std::to_string(p));
    if (!training || p == 0.0f) return x;
    check(x.defined() && x.dtype() == DType::F32, "dropout: x must be float32");
    uint64_t key = rng.next_u64();
    float scale = 1.0f / (1.0f - p);
    if (x.is_cuda()) return dropout_cuda(x, key, p, scale);
    Tensor y = empty(x.shape());
    float* py = y.f32();
    const float* px = x.f32();
    parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
        dropout_forward(py, px, key, p, scale, begin, end);
    });
    if (needs_grad({x}))
        record(y, {x}, [x, key, p, scale](const Tensor& gy) {
            float* gx = x.grad_buffer().f32();
            const float* g = gy.f32();
            parallel_for(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
                dropout_backward(gx, g, key, p, scale, begin, end);
            });
        });
    return y;
}

}  // namespace qdq
