// log_softmax, cross_entropy and softmax_kl_div over the last axis. With
// lse = log Σ_j e^{x_j} = m + s, m the row max and s = log Σ_j e^{x_j − m} (so nothing overflows):
//   log_softmax(x) = x − lse,  d/dx: dx = dy − softmax(x)·Σ dy
//   cross_entropy row r = lse_r − x_r[label_r],  d/dx_r = (softmax(x_r) − onehot(label_r)) / count
//   softmax_kl_div: with log p = log_softmax(t/T) (teacher) and log q = log_softmax(x/T)
//   (student), row r = Σ_j p_j·(log p_j − log q_j),  d/dx_r = (q_r − p_r) / (T·rows)
// m and s are kept apart, never rounded into one float: x − m is exact for the large entries, so
// logits of magnitude ~100 (ulp 8e-6) lose no more precision than logits near 1.
// cross_entropy is fused: it keeps m and s per row for backward, not an [N, C] tensor (for a
// masked-LM head C is the vocabulary, ~30k).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "autograd/ops.h"
#include "autograd/ops/vector_math.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 14;

int64_t row_grain(int64_t C) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(C, 1)); }

// lse(scale·x) = scale·max + log_sum, max the row's max of x. Scaling x − max rather than x keeps
// the differences exact for the large entries (see above) at a temperature too; scale 1
// multiplies exactly.
struct LogSumExp {
    float max, log_sum;
};

inline LogSumExp row_logsumexp(const float* x, int64_t C, float scale = 1.0f) {
    float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < C; ++j) m = std::max(m, x[j]);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < C; ++j) sum += vmath::exp_approx((x[j] - m) * scale);
    return {m, std::log(sum)};
}

// log_softmax(scale·x)_j of a row
inline float log_softmax_at(const float* x, const LogSumExp& lse, float scale, int64_t j) {
    return (x[j] - lse.max) * scale - lse.log_sum;
}

// y [rows, C] = x − lse(x), row by row
QDQ_VECTOR_KERNEL
void log_softmax_forward(float* y, const float* x, int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        LogSumExp lse = row_logsumexp(x + r * C, C);
#pragma omp simd
        for (int64_t j = 0; j < C; ++j) y[r * C + j] = (x[r * C + j] - lse.max) - lse.log_sum;
    }
}

// dx [rows, C] += dy − e^y·Σ dy
QDQ_VECTOR_KERNEL
void log_softmax_backward(float* dx, const float* dy, const float* y, int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* dyr = dy + r * C;
        const float* yr = y + r * C;
        float* dxr = dx + r * C;
        float dy_sum = 0.0f;
#pragma omp simd reduction(+ : dy_sum)
        for (int64_t j = 0; j < C; ++j) dy_sum += dyr[j];
#pragma omp simd
        for (int64_t j = 0; j < C; ++j) dxr[j] += dyr[j] - vmath::exp_approx(yr[j]) * dy_sum;
    }
}

// losses [rows] and lse [rows] for logits x [rows, C] and labels [rows]; ignored rows get 0.
QDQ_VECTOR_KERNEL
void cross_entropy_forward(float* losses, LogSumExp* lse, const float* x, const int32_t* labels,
                           int32_t ignore_index, int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        if (labels[r] == ignore_index) {
            losses[r] = 0.0f;
            lse[r] = {0.0f, 0.0f};
            continue;
        }
        lse[r] = row_logsumexp(x + r * C, C);
        losses[r] = (lse[r].max - x[r * C + labels[r]]) + lse[r].log_sum;
    }
}

// dx [rows, C] += scale·(softmax(x) − onehot(label)) for rows not ignored
QDQ_VECTOR_KERNEL
void cross_entropy_backward(float* dx, const float* x, const LogSumExp* lse,
                            const int32_t* labels, int32_t ignore_index, float scale, int64_t rows,
                            int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        if (labels[r] == ignore_index) continue;
        const float* xr = x + r * C;
        float* dxr = dx + r * C;
        float m = lse[r].max, log_sum = lse[r].log_sum;
#pragma omp simd
        for (int64_t j = 0; j < C; ++j)
            dxr[j] += scale * vmath::exp_approx((xr[j] - m) - log_sum);
        dxr[labels[r]] -= scale;
    }
}

// losses [rows] and both rows' lse for student x and teacher t [rows, C] at 1/T = inv_t. A
// teacher probability that underflows to 0 adds 0, as PyTorch's kl_div takes 0·log 0 as 0.
QDQ_VECTOR_KERNEL
void softmax_kl_div_forward(float* losses, LogSumExp* lse_x, LogSumExp* lse_t, const float* x, const float* t,
                            float inv_t, int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * C;
        const float* tr = t + r * C;
        const LogSumExp lx = lse_x[r] = row_logsumexp(xr, C, inv_t);
        const LogSumExp lt = lse_t[r] = row_logsumexp(tr, C, inv_t);
        float kl = 0.0f;
#pragma omp simd reduction(+ : kl)
        for (int64_t j = 0; j < C; ++j) {
            const float log_p = log_softmax_at(tr, lt, inv_t, j);
            kl += vmath::exp_approx(log_p) * (log_p - log_softmax_at(xr, lx, inv_t, j));
        }
        losses[r] = kl;
    }
}

// dx [rows, C] += scale·(q − p), q and p the student's and teacher's softmax at 1/T = inv_t
QDQ_VECTOR_KERNEL
void softmax_kl_div_backward(float* dx, const float* x, const float* t, const LogSumExp* lse_x,
                             const LogSumExp* lse_t, float inv_t, float scale, int64_t rows, int64_t C) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * C;
        const float* tr = t + r * C;
        float* dxr = dx + r * C;
#pragma omp simd
        for (int64_t j = 0; j < C; ++j)
            dxr[j] += scale * (vmath::exp_approx(log_softmax_at(xr, lse_x[r], inv_t, j)) -
                               vmath::exp_approx(log_softmax_at(tr, lse_t[r], inv_t, j)));
    }
}

// The loss's gradient where the device kernels read it: already there unless a caller seeded
// the backward from the host.
Tensor on_device(const Tensor& gy) { return gy.is_cuda() ? gy : gy.to(Device::CUDA); }

// The device path (cuda/kernels/cross_entropy.cuh): row losses on the GPU and their mean there,
// in double and row order as on the CPU; the loss is a scalar on the GPU, read by no one here,
// and its gradient is read by the backward kernel, not by the host.
Tensor cross_entropy_cuda(const Tensor& logits, const Tensor& labels, int32_t ignore_index, int64_t count) {
    const int64_t rows = logits.size(0), C = logits.size(1);
    const Tensor device_labels = labels.to(Device::CUDA);
    Tensor losses = empty({rows}, DType::F32, Device::CUDA), row_max = empty({rows}, DType::F32, Device::CUDA);
    Tensor log_sum = empty({rows}, DType::F32, Device::CUDA);
    cuda::cross_entropy_rows_forward(losses.f32(), row_max.f32(), log_sum.f32(), logits.f32(), device_labels.i32(),
                                     ignore_index, rows, C);
    Tensor loss = empty({}, DType::F32, Device::CUDA);
    cuda::mean_of_rows(loss.f32(), losses.f32(), rows, count);
    if (needs_grad({logits}))
        record(loss, {logits}, [logits, device_labels, row_max, log_sum, ignore_index, rows, C, count](const Tensor& gy) {
            cuda::cross_entropy_rows_backward(logits.grad_buffer().f32(), logits.f32(), row_max.f32(), log_sum.f32(),
                                              device_labels.i32(), ignore_index, on_device(gy).f32(), (float)count, rows, C);
        });
    return loss;
}

// The device path of softmax_kl_div (cuda/kernels/cross_entropy.cuh), the rows' mean on the GPU
// in double and row order as on the CPU; the loss is a scalar on the GPU.
Tensor softmax_kl_div_cuda(const Tensor& student, const Tensor& teacher, float inv_t) {
    const int64_t rows = student.size(0), C = student.size(1);
    Tensor losses = empty({rows}, DType::F32, Device::CUDA), stats = empty({rows, 4}, DType::F32, Device::CUDA);
    cuda::kl_div_rows_forward(losses.f32(), stats.f32(), student.f32(), teacher.f32(), inv_t, rows, C);
    Tensor loss = empty({}, DType::F32, Device::CUDA);
    cuda::mean_of_rows(loss.f32(), losses.f32(), rows, rows);
    if (needs_grad({student}))
        record(loss, {student}, [student, teacher, stats, inv_t, rows, C](const Tensor& gy) {
            cuda::kl_div_rows_backward(student.grad_buffer().f32(), student.f32(), teacher.f32(), stats.f32(), inv_t,
                                       on_device(gy).f32(), (float)rows, rows, C);
        });
    return loss;
}

}  // namespace

Tensor log_softmax(const Tensor& x) {
    check(x.defined() && x.dtype() == DType::F32 && x.dim() >= 1,
          "log_softmax: x must be a float32 tensor with at least one dim");
    int64_t C = x.size(-1), rows = C ? x.numel() / C : 0;
    if (x.is_cuda()) {
        Tensor y = empty(x.shape(), DType::F32, Device::CUDA);
        cuda::log_softmax_rows_forward(y.f32(), x.f32(), rows, C);
        if (needs_grad({x}))
            record(y, {x}, [x, y, rows, C](const Tensor& gy) {
                cuda::log_softmax_rows_backward(x.grad_buffer().f32(), gy.f32(), y.f32(), rows, C);
            });
        return y;
    }
    Tensor y = empty(x.shape());
    float* py = y.f32();
    const float* px = x.f32();
    parallel_for(rows, row_grain(C), [&](int64_t begin, int64_t end) {
        log_softmax_forward(py + begin * C, px + begin * C, end - begin, C);
    });
    if (needs_grad({x}))
        record(y, {x}, [x, y, rows, C](const Tensor& gy) {
            float* gx = x.grad_buffer().f32();
            const float* g = gy.f32();
            const float* py = y.f32();
            parallel_for(rows, row_grain(C), [&](int64_t begin, int64_t end) {
                log_softmax_backward(gx + begin * C, g + begin * C, py + begin * C, end - begin,
                                     C);
            });
        });
    return y;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int32_t ignore_index) {
    check(logits.defined() && logits.dtype() == DType::F32 && logits.dim() == 2,
          "cross_entropy: logits must be a float32 [N, C] tensor");
    check(labels.defined() && labels.dtype() == DType::I32,
          "cross_entropy: labels must be an int32 tensor");
    check(!labels.is_cuda(), "cross_entropy: labels come from the CPU (a batch's collate), whatever the logits' device");
    int64_t rows = logits.size(0), C = logits.size(1);
    check(labels.dim() == 1 && labels.size(0) == rows,
          "cross_entropy: labels must be [" + std::to_string(rows) + "], got " +
              shape_str(labels.shape()));
    const int32_t* pl = labels.i32();
    int64_t count = 0;
    for (int64_t r = 0; r < rows; ++r) {
        if (pl[r] == ignore_index) continue;
        check(pl[r] >= 0 && pl[r] < C, "cross_entropy: label " + std::to_string(pl[r]) +
                                           " at row " + std::to_string(r) + " is outside [0, " +
                                           std::to_string(C) + ")");
        ++count;
    }
    if (logits.is_cuda()) return cross_entropy_cuda(logits, labels, ignore_index, count);

    Tensor losses = empty({rows});
    auto lse = std::make_shared<std::vector<LogSumExp>>((size_t)rows);
    const float* px = logits.f32();
    parallel_for(rows, row_grain(C), [&](int64_t begin, int64_t end) {
        cross_entropy_forward(losses.f32() + begin, lse->data() + begin, px + begin * C,
                              pl + begin, ignore_index, end - begin, C);
    });
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r) total += losses.f32()[r];
    Tensor loss = full({}, count ? (float)(total / (double)count) : 0.0f);

    if (needs_grad({logits}))
        record(loss, {logits}, [logits, lse, saved_labels = labels.clone(), ignore_index, rows, C,
                      count](const Tensor& gy) {
            float scale = count ? gy.item() / (float)count : 0.0f;
            float* gx = logits.grad_buffer().f32();
            const float* px = logits.f32();
            parallel_for(rows, row_grain(C), [&](int64_t begin, int64_t end) {
                cross_entropy_backward(gx + begin * C, px + begin * C, lse->data() + begin,
                                       saved_labels.i32() + begin, ignore_index, scale,
                                       end - begin, C);
            });
        });
    return loss;
}

Tensor softmax_kl_div(const Tensor& student, const Tensor& teacher, float temperature) {
    check(student.defined() && student.dtype() == DType::F32 && student.dim() == 2,
          "softmax_kl_div: student logits must be a float32 [N, C] tensor");
    check(teacher.defined() && teacher.dtype() == DType::F32 && teacher.shape() == student.shape(),
          "softmax_kl_div: teacher logits must be float32 " + shape_str(student.shape()) + " as the student's");
    check(temperature > 0 && std::isfinite(temperature),
          "softmax_kl_div: temperature must be positive, got " + std::to_string(temperature));
    check_same_device("softmax_kl_div", {student, teacher});
    const float inv_t = 1.0f / temperature;
    if (student.is_cuda()) return softmax_kl_div_cuda(student, teacher, inv_t);
    const int64_t rows = student.size(0), C = student.size(1);

    Tensor losses = empty({rows});
    auto lse_x = std::make_shared<std::vector<LogSumExp>>((size_t)rows);
    auto lse_t = std::make_shared<std::vector<LogSumExp>>((size_t)rows);
    const float* px = student.f32();
    const float* pt = teacher.f32();
    parallel_for(rows, row_grain(C), [&](int64_t begin, int64_t end) {
        softmax_kl_div_forward(losses.f32() + begin, lse_x->data() + begin, lse_t->data() + begin, px + begin * C,
                               pt + begin * C, inv_t, end - begin, C);
    });
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r) total += losses.f32()[r];
    Tensor loss = full({}, rows ? (float)(total / (double)rows) : 0.0f);

    if (needs_grad({student}))
        record(loss, {student}, [student, teacher, lse_x, lse_t, inv_t, rows, C](const Tensor& gy) {
            const float scale = rows ? gy.item() * inv_t / (float)rows : 0.0f;
            float* gx = student.grad_buffer().f32();
            parallel_for(rows, row_grain(C), [&](int64_t begin, int64_t end) {
                softmax_kl_div_backward(gx + begin * C, student.f32() + begin * C, teacher.f32() + begin * C,
                                        lse_x->data() + begin, lse_t->data() + begin, inv_t, scale, end - begin, C);
            });
        });
    return loss;
}

}  // namespace qdq
