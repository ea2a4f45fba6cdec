// Shape ops: reshape (a view), and the copies transpose, permute, split_heads, merge_heads,
// slice and concat. Each copy's backward is the same index map run the other way, adding
// into the input's gradient.
#include <algorithm>

#include "autograd/ops.h"
#include "autograd/ops/axis.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;

// ---- reshape ----

Shape resolve_view_shape(const Shape& from, const Shape& to) {
    int64_t numel = shape_numel(from);
    std::string mismatch = "reshape: cannot view " + shape_str(from) + " (" +
                           std::to_string(numel) + " elements) as " + shape_str(to);
    Shape out = to;
    int64_t known = 1;
    int64_t free_axis = -1;
    for (size_t i = 0; i < to.size(); ++i) {
        if (to[i] == -1) {
            check(free_axis < 0, mismatch + ": more than one -1");
            free_axis = (int64_t)i;
        } else {
            check(to[i] >= 0, mismatch + ": negative dimension");
            known *= to[i];
        }
    }
    if (free_axis >= 0) {
        check(known != 0 && numel % known == 0, mismatch);
        out[(size_t)free_axis] = numel / known;
    }
    check(shape_numel(out) == numel, mismatch);
    return out;
}

// A new handle on a's storage with another shape, outside autograd.
Tensor view_as_shape(const Tensor& a, const Shape& shape) {
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = shape;
    impl->dtype = a.dtype();
    impl->device = a.device();
    impl->storage = a.impl()->storage;
    impl->data = a.impl()->data;
    return Tensor(impl);
}

// ---- permutations ----

Shape contiguous_strides(const Shape& shape) {
    Shape strides(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= shape[d];
    }
    return strides;
}

// Checks that dims is a permutation of shape's axes (negative axes allowed); returns it
// with non-negative axes.
std::vector<int64_t> normalize_permutation(const char* op, const Shape& shape,
                                           const std::vector<int64_t>& dims) {
    std::string context =
        std::string(op) + ": dims " + shape_str(dims) + " for shape " + shape_str(shape);
    check(dims.size() == shape.size(), context + ": need one entry per axis");
    std::vector<int64_t> out(dims.size());
    std::vector<bool> seen(dims.size(), false);
    for (size_t i = 0; i < dims.size(); ++i) {
        int64_t n = (int64_t)dims.size();
        check(dims[i] >= -n && dims[i] < n,
              context + ": axis " + std::to_string(dims[i]) + " out of range");
        out[i] = dims[i] < 0 ? dims[i] + n : dims[i];
        check(!seen[(size_t)out[i]], context + ": axis " + std::to_string(dims[i]) + " repeated");
        seen[(size_t)out[i]] = true;
    }
    return out;
}

// Output of `in_shape` permuted by dims: its shape, and for each of its axes the input
// stride of the axis it came from.
struct Permutation {
    Shape out_shape;
    Shape src_strides;
};

Permutation plan_permutation(const Shape& in_shape, const std::vector<int64_t>& dims) {
    Shape in_strides = contiguous_strides(in_shape);
    Permutation p{Shape(dims.size()), Shape(dims.size())};
    for (size_t i = 0; i < dims.size(); ++i) {
        p.out_shape[i] = in_shape[(size_t)dims[i]];
        p.src_strides[i] = in_strides[(size_t)dims[i]];
    }
    return p;
}

// Calls row(r, src, step) for every row r of the output (its last axis, L elements), where
// output element (r, j) is input element src + j·step. src follows an odometer over the
// leading axes, so only each thread's first row costs divisions.
template <typename Row>
void for_each_output_row(const Permutation& p, Row row) {
    size_t lead = p.out_shape.empty() ? 0 : p.out_shape.size() - 1;
    int64_t L = p.out_shape.empty() ? 1 : p.out_shape.back();
    int64_t step = p.src_strides.empty() ? 0 : p.src_strides.back();
    int64_t numel = shape_numel(p.out_shape);
    if (numel == 0) return;
    parallel_for(numel / L, std::max<int64_t>(1, kGrain / L), [&](int64_t begin, int64_t end) {
        std::vector<int64_t> idx(lead);
        int64_t rest = begin, src = 0;
        for (size_t d = lead; d-- > 0;) {
            idx[d] = rest % p.out_shape[d];
            rest /= p.out_shape[d];
            src += idx[d] * p.src_strides[d];
        }
        for (int64_t r = begin; r < end; ++r) {
            row(r, src, step);
            for (size_t d = lead; d-- > 0;) {
                src += p.src_strides[d];
                if (++idx[d] < p.out_shape[d]) break;
                src -= p.src_strides[d] * p.out_shape[d];
                idx[d] = 0;
            }
        }
    });
}

// y = x viewed as in_shape, permuted by dims, viewed as out_shape. The backward adds dy
// back through the same map; a permutation is one-to-one, so rows never collide.
// The device path of permuted_copy (cuda/kernels/shape.cuh), the same plan.
Tensor permuted_copy_cuda(const Tensor& x, const Permutation& p, const Shape& out_shape) {
    Tensor y = empty(out_shape, DType::F32, Device::CUDA);
    const int dims = (int)p.out_shape.size();
    cuda::permute_copy(y.f32(), x.f32(), p.out_shape.data(), p.src_strides.data(), dims, false);
    if (needs_grad({x}))
        record(y, {x}, [x, p, dims](const Tensor& gy) {
            cuda::permute_copy(gy.f32(), x.grad_buffer().f32(), p.out_shape.data(), p.src_strides.data(), dims, true);
        });
    return y;
}

Tensor permuted_copy(const Tensor& x, const Shape& in_shape, const std::vector<int64_t>& dims,
                     const Shape& out_shape, const char* name) {
    Permutation p = plan_permutation(in_shape, dims);
    if (x.is_cuda()) return permuted_copy_cuda(x, p, out_shape);
    Tensor y = empty(out_shape);
    float* py = y.f32();
    const float* px = x.f32();
    int64_t L = p.out_shape.empty() ? 1 : p.out_shape.back();
    for_each_output_row(p, [&](int64_t r, int64_t src, int64_t step) {
        float* out = py + r * L;
        const float* in = px + src;
        if (step == 1)
            for (int64_t j = 0; j < L; ++j) out[j] = in[j];
        else
            for (int64_t j = 0; j < L; ++j) out[j] = in[j * step];
    });
    if (needs_grad({x}))
        record(y, {x}, [x, p, L](const Tensor& gy) {
            float* gx = x.grad_buffer().f32();
            const float* g = gy.f32();
            for_each_output_row(p, [&](int64_t r, int64_t src, int64_t step) {
                const float* dy = g + r * L;
                float* dx = gx + src;
                if (step == 1)
                    for (int64_t j = 0; j < L; ++j) dx[j] += dy[j];
                else
                    for (int64_t j = 0; j < L; ++j) dx[j * step] += dy[j];
            });
        });
    return y;
}

// ---- slice and concat ----

// A block of `len` positions along an axis, with the tensor seen as [outer, n, inner].
struct AxisBlock {
    float* data;
    int64_t n, start;
};

// dst[o, dst.start + k, i] = (or +=) src[o, src.start + k, i] for k < len: slice, concat
// and both their backwards. Each (o) is a contiguous run of len·inner floats on both sides.
template <bool kAccumulate>
void copy_axis_block(AxisBlock dst, AxisBlock src, int64_t len, int64_t outer, int64_t inner) {
    int64_t run = len * inner;
    parallel_for(outer * run, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t e = begin; e < end;) {
            int64_t o = e / run, j0 = e % run;
            int64_t count = std::min(run - j0, end - e);
            float* d = dst.data + (o * dst.n + dst.start) * inner + j0;
            const float* s = src.data + (o * src.n + src.start) * inner + j0;
            for (int64_t j = 0; j < count; ++j) {
                if constexpr (kAccumulate)
                    d[j] += s[j];
                else
                    d[j] = s[j];
            }
            e += count;
        }
    });
}

}  // namespace

Tensor reshape(const Tensor& a, const Shape& shape) {
    Tensor y = view_as_shape(a, resolve_view_shape(a.shape(), shape));
    if (needs_grad({a}))
        record(y, {a}, [a](const Tensor& gy) {
            add_inplace(a.grad_buffer(), view_as_shape(gy, a.shape()));
        });
    return y;
}

Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1) {
    std::vector<int64_t> dims(a.shape().size());
    for (size_t i = 0; i < dims.size(); ++i) dims[i] = (int64_t)i;
    std::swap(dims[(size_t)normalize_axis("transpose", axis0, a.shape())],
              dims[(size_t)normalize_axis("transpose", axis1, a.shape())]);
    return permuted_copy(a, a.shape(), dims, plan_permutation(a.shape(), dims).out_shape,
                         "transpose");
}

Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) {
    std::vector<int64_t> axes = normalize_permutation("permute", a.shape(), dims);
    return permuted_copy(a, a.shape(), axes, plan_permutation(a.shape(), axes).out_shape,
                         "permute");
}

// [B, T, H·D] is [B, T, H, D] in memory; swapping T and H gives each head contiguous rows.
Tensor split_heads(const Tensor& x, int64_t heads) {
    const Shape& s = x.shape();
    check(x.dim() == 3 && heads > 0 && s[2] % heads == 0,
          "split_heads: expected [B, T, H*D] with H = " + std::to_string(heads) + ", got " +
              shape_str(s));
    int64_t B = s[0], T = s[1], H = heads, D = s[2] / heads;
    return permuted_copy(x, {B, T, H, D}, {0, 2, 1, 3}, {B, H, T, D}, "split_heads");
}

Tensor merge_heads(const Tensor& x) {
    const Shape& s = x.shape();
    check(x.dim() == 4, "merge_heads: expected [B, H, T, D], got " + shape_str(s));
    int64_t B = s[0], H = s[1], T = s[2], D = s[3];
    return permuted_copy(x, {B, H, T, D}, {0, 2, 1, 3}, {B, T, H * D}, "merge_heads");
}

Tensor slice(const Tensor& a, int64_t axis, int64_t start, int64_t end) {
    int64_t ax = normalize_axis("slice", axis, a.shape());
    AxisSplit s = split_at_axis(a.shape(), ax);
    check(0 <= start && start <= end && end <= s.n,
          "slice: range [" + std::to_string(start) + ", " + std::to_string(end) +
              ") outside axis " + std::to_string(ax) + " of shape " + shape_str(a.shape()));
    Shape shape = a.shape();
    int64_t len = end - start;
    shape[(size_t)ax] = len;
    if (a.is_cuda()) {
        Tensor y = empty(shape, DType::F32, Device::CUDA);
        cuda::axis_block_copy(y.f32(), len, 0, a.f32(), s.n, start, len, s.outer, s.inner, false);
        if (needs_grad({a}))
            record(y, {a}, [a, s, start, len](const Tensor& gy) {
                cuda::axis_block_copy(a.grad_buffer().f32(), s.n, start, gy.f32(), len, 0, len, s.outer, s.inner, true);
            });
        return y;
    }
    Tensor y = empty(shape);
    copy_axis_block<false>({y.f32(), len, 0}, {a.f32(), s.n, start}, len, s.outer, s.inner);
    if (needs_grad({a}))
        record(y, {a}, [a, s, start, len](const Tensor& gy) {
            copy_axis_block<true>({a.grad_buffer().f32(), s.n, start}, {gy.f32(), len, 0}, len,
                                  s.outer, s.inner);
        });
    return y;
}

Tensor concat(const std::vector<Tensor>& parts, int64_t axis) {
    check(!parts.empty(), "concat: no tensors to join");
    const Shape& first = parts[0].shape();
    int64_t ax = normalize_axis("concat", axis, first);
    Shape shape = first;
    shape[(size_t)ax] = 0;
    check_same_device("concat", parts);
    bool any_requires_grad = false;
    for (size_t k = 0; k < parts.size(); ++k) {
        const Shape& pk = parts[k].shape();
        bool fits = pk.size() == first.size();
        for (size_t d = 0; fits && d < pk.size(); ++d) fits = d == (size_t)ax || pk[d] == first[d];
        check(fits, "concat: part " + std::to_string(k) + " has shape " + shape_str(pk) +
                        ", which does not match part 0's " + shape_str(first) + " outside axis " +
                        std::to_string(ax));
        shape[(size_t)ax] += pk[(size_t)ax];
        any_requires_grad = any_requires_grad || parts[k].requires_grad();
    }
    AxisSplit s = split_at_axis(shape, ax);
    const bool on_device = parts[0].is_cuda();
    Tensor y = empty(shape, DType::F32, parts[0].device());
    int64_t offset = 0;
    for (const Tensor& part : parts) {
        int64_t len = part.shape()[(size_t)ax];
        if (on_device) cuda::axis_block_copy(y.f32(), s.n, offset, part.f32(), len, 0, len, s.outer, s.inner, false);
        else copy_axis_block<false>({y.f32(), s.n, offset}, {part.f32(), len, 0}, len, s.outer, s.inner);
        offset += len;
    }
    if (grad_enabled() && any_requires_grad)
        record(y, parts, [parts, s, ax, on_device](const Tensor& gy) {
            int64_t offset = 0;
            for (const Tensor& part : parts) {
                int64_t len = part.shape()[(size_t)ax];
                if (part.requires_grad() && on_device)
                    cuda::axis_block_copy(part.grad_buffer().f32(), len, 0, gy.f32(), s.n, offset, len, s.outer, s.inner, true);
                else if (part.requires_grad())
                    copy_axis_block<true>({part.grad_buffer().f32(), len, 0}, {gy.f32(), s.n, offset}, len, s.outer, s.inner);
                offset += len;
            }
        });
    return y;
}

}  // namespace qdq
