// softmax(scale·x + mask) over the last axis, fused: attention's scaling and additive padding
// mask cost no extra pass or tensor. Stable: the row max is subtracted before exponentiating.
// Backward uses only the saved output y: with z = scale·x + mask,
//   dz = y ⊙ (dy − Σ_j dy_j y_j),  dx = scale·dz  (the mask is a constant).
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "autograd/broadcast.h"
#include "autograd/ops.h"
#include "autograd/ops/vector_math.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 14;

// y [rows, C] = softmax(scale·x [rows, C] + mask row); mask_rows[r] is the offset of row r's
// mask (C values) in mask, or mask is null.
QDQ_VECTOR_KERNEL
void softmax_forward(float* y, const float* x, const float* mask, const int64_t* mask_rows,
                     float scale, int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * C;
        float* yr = y + r * C;
        float row_max = -std::numeric_limits<float>::infinity();
        if (mask) {
            const float* mr = mask + mask_rows[r];
#pragma omp simd reduction(max : row_max)
            for (int64_t j = 0; j < C; ++j) {
                yr[j] = scale * xr[j] + mr[j];
                row_max = std::max(row_max, yr[j]);
            }
        } else {
#pragma omp simd reduction(max : row_max)
            for (int64_t j = 0; j < C; ++j) {
                yr[j] = scale * xr[j];
                row_max = std::max(row_max, yr[j]);
            }
        }
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < C; ++j) {
            yr[j] = vmath::exp_approx(yr[j] - row_max);
            sum += yr[j];
        }
        float inv_sum = 1.0f / sum;
#pragma omp simd
        for (int64_t j = 0; j < C; ++j) yr[j] *= inv_sum;
    }
}

// dx [rows, C] += scale · y ⊙ (dy − Σ dy⊙y), row by row
QDQ_VECTOR_KERNEL
void softmax_backward(float* dx, const float* dy, const float* y, float scale, int64_t rows,
                      int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* dyr = dy + r * C;
        const float* yr = y + r * C;
        float* dxr = dx + r * C;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < C; ++j) dot += dyr[j] * yr[j];
#pragma omp simd
        for (int64_t j = 0; j < C; ++j) dxr[j] += scale * yr[j] * (dyr[j] - dot);
    }
}

// The rows' mask offsets on the device (cuda/kernels/softmax.cuh): int64 values, carried in an
// int32 tensor of twice their count. They follow from x's and the mask's shapes alone, so they are
// kept while those stay: every layer and step of a run shares them, where a fresh copy at each call
// made the host wait for the GPU's queue once a layer.
const int64_t* device_mask_offsets(const Shape& x_shape, const Tensor& mask, const BroadcastMap* mask_map,
                                   int64_t rows, int64_t C) {
    struct Kept {
        Shape x, mask;
        Tensor offsets;
    };
    static thread_local Kept kept;
    const Shape mask_shape = mask.defined() ? mask.shape() : Shape{};
    if (!kept.offsets.defined() || kept.x != x_shape || kept.mask != mask_shape) {
        Tensor offsets = zeros({2 * std::max<int64_t>(rows, 1)}, DType::I32);
        if (mask_map) {
            auto* o = reinterpret_cast<int64_t*>(offsets.raw());
            mask_map->offsets(0, rows, o);
            for (int64_t r = 0; r < rows; ++r) o[r] *= C;
        }
        kept = {x_shape, mask_shape, offsets.to(Device::CUDA)};
    }
    return reinterpret_cast<const int64_t*>(kept.offsets.raw());
}

Tensor softmax_cuda(const Tensor& x, float scale, const Tensor& mask, const BroadcastMap* mask_map, int64_t rows,
                    int64_t C) {
    const int64_t* offsets = device_mask_offsets(x.shape(), mask, mask_map, rows, C);
    Tensor y = empty(x.shape(), DType::F32, Device::CUDA);
    cuda::softmax_rows_forward(y.f32(), x.f32(), mask.defined() ? mask.f32() : nullptr, offsets, scale, rows, C);
    if (needs_grad({x}))
        record(y, {x}, [x, y, scale, rows, C](const Tensor& gy) {
            cuda::softmax_rows_backward(x.grad_buffer().f32(), gy.f32(), y.f32(), scale, rows, C);
        });
    return y;
}

}  // namespace

Tensor softmax(const Tensor& x, float scale, const Tensor& mask) {
    check(x.defined() && x.dtype() == DType::F32 && x.dim() >= 1,
          "softmax: x must be a float32 tensor with at least one dim");
    int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
    // Each row of x reads one contiguous row of the mask; which one is the broadcast of the
    // mask's leading dims against x's.
    Shape x_rows(x.shape().begin(), x.shape().end() - 1);
    check_same_device("softmax", {x, mask});
    std::unique_ptr<BroadcastMap> mask_map;
    if (mask.defined()) {
        check(mask.dtype() == DType::F32, "softmax: mask must be float32");
        check(mask.dim() >= 1 && mask.dim() <= x.dim() && mask.size(-1) == C,
              "softmax: mask " + shape_str(mask.shape()) + " must end in x's last dim " +
                  std::to_string(C) + " and broadcast to " + shape_str(x.shape()));
        Shape mask_rows(mask.shape().begin(), mask.shape().end() - 1);
        mask_map = std::make_unique<BroadcastMap>(mask_rows, x_rows);
    }
    if (x.is_cuda()) return softmax_cuda(x, scale, mask, mask_map.get(), rows, C);

    Tensor y = empty(x.shape());
    float* py = y.f32();
    const float* px = x.f32();
    const float* pm = mask.defined() ? mask.f32() : nullptr;
    parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(C, 1)),
                 [&](int64_t begin, int64_t end) {
                     std::vector<int64_t> mask_rows;
                     if (mask_map) {
                         mask_rows.resize((size_t)(end - begin));
                         mask_map->offsets(begin, end, mask_rows.data());
                         for (int64_t& offset : mask_rows) offset *= C;
                     }
                     softmax_forward(py + begin * C, px + begin * C, pm, mask_rows.data(), scale,
                                     end - begin, C);
                 });
    if (needs_grad({x}))
        record(y, {x}, [x, y, scale, rows, C](const Tensor& gy) {
            float* gx = x.grad_buffer().f32();
            const float* g = gy.f32();
            const float* py = y.f32();
            parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(C, 1)),
                         [&](int64_t begin, int64_t end) {
                             softmax_backward(gx + begin * C, g + begin * C, py + begin * C,
                                              scale, end - begin, C);
                         });
        });
    return y;
}

}  // namespace qdq
