// add, sub, mul, div with numpy broadcasting; add_inplace for gradient accumulation.
// Backward of a broadcast input sums the output gradient over the repeated dims. On the GPU
// through cuda/kernels/broadcast.cuh (add's bias-shaped case through its own kernels).
#include <algorithm>

#include "autograd/broadcast.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;

// Whether b's shape is a's trailing dims (b repeats over a's leading ones): the broadcast the
// device's add supports, as BERT's bias and position-embedding adds need.
bool is_trailing_of(const Shape& b, const Shape& a) {
    return b.size() <= a.size() && std::equal(b.begin(), b.end(), a.end() - (int64_t)b.size());
}

// How an operand of shape `x` repeats over `out`: every `period` elements when it is one value
// (period 1) or out's trailing dims after leading 1s (a bias, a per-channel scale); 0 otherwise.
int64_t repeat_period(const Shape& x, const Shape& out) {
    const int64_t n = shape_numel(x);
    if (n == 1) return 1;
    const auto first = std::find_if(x.begin(), x.end(), [](int64_t d) { return d != 1; });
    return is_trailing_of(Shape(first, x.end()), out) ? n : 0;
}

// y[i] = f(a[ia(i)], b[ib(i)]) over the broadcast shape. One operand of the output's shape and
// the other repeating (a bias, a scale) is walked directly, without an offset per element.
template <typename F>
Tensor binary_forward(const Tensor& a, const Tensor& b, F f) {
    Shape shape = broadcast_shapes(a.shape(), b.shape());
    Tensor y = empty(shape);
    float* py = y.f32();
    const float* pa = a.f32();
    const float* pb = b.f32();
    if (a.shape() == shape && b.shape() == shape) {
        parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) py[i] = f(pa[i], pb[i]);
        });
        return y;
    }
    const bool a_full = a.shape() == shape;
    const int64_t period = a_full || b.shape() == shape ? repeat_period((a_full ? b : a).shape(), shape) : 0;
    if (period > 0) {
        const float* full = a_full ? pa : pb;
        const float* repeated = a_full ? pb : pa;
        parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin, j = begin % period; i < end; ++i, j = j + 1 == period ? 0 : j + 1)
                py[i] = a_full ? f(full[i], repeated[j]) : f(repeated[j], full[i]);
        });
        return y;
    }
    BroadcastMap map_a(a.shape(), shape), map_b(b.shape(), shape);
    parallel_for(y.numel(), kGrain, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> ia((size_t)(end - begin)), ib((size_t)(end - begin));
        map_a.offsets(begin, end, ia.data());
        map_b.offsets(begin, end, ib.data());
        for (int64_t i = begin; i < end; ++i) py[i] = f(pa[ia[i - begin]], pb[ib[i - begin]]);
    });
    return y;
}

// Adds g(i) (a value per output element) into x's gradient, reducing over broadcast dims.
template <typename G>
void accumulate_grad(const Tensor& x, const Shape& out_shape, G g) {
    Tensor gx = x.grad_buffer();
    float* pgx = gx.f32();
    int64_t n = shape_numel(out_shape);
    if (x.shape() == out_shape) {
        parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) pgx[i] += g(i);
        });
        return;
    }
    Tensor full_grad = empty(out_shape);
    float* pf = full_grad.f32();
    parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) pf[i] = g(i);
    });
    reduce_broadcast_add(gx, full_grad);
}

// Values of an input at each output element (for the mul/div backward).
std::vector<float> expand(const Tensor& x, const Shape& out_shape) {
    int64_t n = shape_numel(out_shape);
    std::vector<float> v((size_t)n);
    std::vector<int64_t> offs((size_t)n);
    BroadcastMap(x.shape(), out_shape).offsets(0, n, offs.data());
    const float* px = x.f32();
    for (int64_t i = 0; i < n; ++i) v[(size_t)i] = px[offs[(size_t)i]];
    return v;
}

// a ∘ b on the device with numpy broadcasting (cuda/kernels/broadcast.cuh).
Tensor binary_cuda(const Tensor& a, const Tensor& b, cuda::BinaryKind kind, const char* name) {
    const Shape shape = broadcast_shapes(a.shape(), b.shape());
    check(shape.size() <= (size_t)cuda::kMaxBroadcastDims,
          std::string(name) + ": on the GPU at most " + std::to_string(cuda::kMaxBroadcastDims) + " dims");
    cuda::BroadcastShape s{(int)shape.size(), {}, {}, {}};
    const BroadcastMap map_a(a.shape(), shape), map_b(b.shape(), shape);
    for (size_t d = 0; d < shape.size(); ++d) {
        s.out[d] = shape[d];
        s.a_strides[d] = map_a.in_strides[d];
        s.b_strides[d] = map_b.in_strides[d];
    }
    Tensor y = empty(shape, DType::F32, Device::CUDA);
    cuda::broadcast_binary(y.f32(), a.f32(), b.f32(), s, kind, y.numel());
    if (needs_grad({a, b}))
        record(y, {a, b}, [a, b, s, kind](const Tensor& gy) {
            for (int which : {0, 1}) {
                const Tensor& x = which == 0 ? a : b;
                if (x.requires_grad())
                    cuda::broadcast_binary_backward(x.grad_buffer().f32(), gy.f32(), a.f32(), b.f32(), s, kind, which, x.numel());
            }
        });
    return y;
}

// a + b on the device: b of a's shape or of its trailing dims (a bias, position embeddings) by
// the add kernels, any other broadcast by binary_cuda.
Tensor add_cuda(const Tensor& a, const Tensor& b) {
    if (!is_trailing_of(b.shape(), a.shape())) return binary_cuda(a, b, cuda::kBinaryAdd, "add");
    Tensor y = empty(a.shape(), DType::F32, Device::CUDA);
    const int64_t nb = b.numel();
    cuda::add_trailing(y.f32(), a.f32(), b.f32(), y.numel(), nb);
    if (needs_grad({a, b}))
        record(y, {a, b}, [a, b, nb](const Tensor& gy) {
            if (a.requires_grad()) add_inplace(a.grad_buffer(), gy);
            if (b.requires_grad()) cuda::sum_repeats(b.grad_buffer().f32(), gy.f32(), nb, nb ? gy.numel() / nb : 0);
        });
    return y;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
    check_same_device("add", {a, b});
    if (a.is_cuda()) return add_cuda(a, b);
    Tensor y = binary_forward(a, b, [](float x, float z) { return x + z; });
    if (needs_grad({a, b}))
        record(y, {a, b}, [a, b](const Tensor& gy) {
            if (a.requires_grad()) {
                if (a.shape() == gy.shape()) add_inplace(a.grad_buffer(), gy);
                else reduce_broadcast_add(a.grad_buffer(), gy);
            }
            if (b.requires_grad()) {
                if (b.shape() == gy.shape()) add_inplace(b.grad_buffer(), gy);
                else reduce_broadcast_add(b.grad_buffer(), gy);
            }
        });
    return y;
}

Tensor sub(const Tensor& a, const Tensor& b) {
    check_same_device("sub", {a, b});
    if (a.is_cuda()) return binary_cuda(a, b, cuda::kBinarySub, "sub");
    Tensor y = binary_forward(a, b, [](float x, float z) { return x - z; });
    if (needs_grad({a, b}))
        record(y, {a, b}, [a, b](const Tensor& gy) {
            const float* g = gy.f32();
            if (a.requires_grad()) accumulate_grad(a, gy.shape(), [g](int64_t i) { return g[i]; });
            if (b.requires_grad()) accumulate_grad(b, gy.shape(), [g](int64_t i) { return -g[i]; });
        });
    return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
    check_same_device("mul", {a, b});
    if (a.is_cuda()) return binary_cuda(a, b, cuda::kBinaryMul, "mul");
    Tensor y = binary_forward(a, b, [](float x, float z) { return x * z; });
    if (needs_grad({a, b}))
        record(y, {a, b}, [a, b](const Tensor& gy) {
            const float* g = gy.f32();
            if (a.requires_grad()) {
                std::vector<float> vb = expand(b, gy.shape());
                accumulate_grad(a, gy.shape(), [&](int64_t i) { return g[i] * vb[(size_t)i]; });
            }
            if (b.requires_grad()) {
                std::vector<float> va = expand(a, gy.shape());
                accumulate_grad(b, gy.shape(), [&](int64_t i) { return g[i] * va[(size_t)i]; });
            }
        });
    return y;
}

Tensor div(const Tensor& a, const Tensor& b) {
    check_same_device("div", {a, b});
    if (a.is_cuda()) return binary_cuda(a, b, cuda::kBinaryDiv, "div");
    Tensor y = binary_forward(a, b, [](float x, float z) { return x / z; });
    if (needs_grad({a, b}))
        record(y, {a, b}, [a, b](const Tensor& gy) {
            const float* g = gy.f32();
            std::vector<float> vb = expand(b, gy.shape());
            if (a.requires_grad())
                accumulate_grad(a, gy.shape(), [&](int64_t i) { return g[i] / vb[(size_t)i]; });
            if (b.requires_grad()) {
                // d(a/b)/db = -a/b²
                std::vector<float> va = expand(a, gy.shape());
                accumulate_grad(b, gy.shape(), [&](int64_t i) {
                    float bi = vb[(size_t)i];
                    return -g[i] * va[(size_t)i] / (bi * bi);
                });
            }
        });
    return y;
}

void add_inplace(const Tensor& dst, const Tensor& src) {
    check_same_shape(dst, src, "add_inplace");
    check_same_device("add_inplace", {dst, src});
    if (dst.is_cuda()) {
        cuda::add(dst.f32(), dst.f32(), src.f32(), dst.numel());
        return;
    }
    float* d = dst.f32();
    const float* s = src.f32();
    parallel_for(dst.numel(), kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) d[i] += s[i];
    });
}

}  // namespace qdq
