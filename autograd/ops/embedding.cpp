// Embedding lookup: out[n, :] = weight[ids[n], :]. Backward scatter-adds each output row's
// gradient into the row of weight it came from; a repeated id receives every contribution, and
// the padding id none (torch's padding_idx).
#include <algorithm>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;

// out [n, C] <- weight [V, C] at ids [n]
void embedding_forward(float* out, const float* weight, const int32_t* ids, int64_t n,
                       int64_t C) {
    parallel_for(n, std::max<int64_t>(1, kGrain / std::max<int64_t>(C, 1)),
                 [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i)
                         std::copy(weight + ids[i] * C, weight + (ids[i] + 1) * C, out + i * C);
                 });
}

// dweight [V, C] += scatter of dout [n, C] by ids [n], rows of padding_idx skipped. Threads
// split the columns, not the rows: two rows with the same id then never race, and the sum
// order is fixed.
void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t n,
                        int64_t C, int64_t padding_idx) {
    parallel_for(C, std::max<int64_t>(16, kGrain / std::max<int64_t>(n, 1)),
                 [&](int64_t c0, int64_t c1) {
                     for (int64_t i = 0; i < n; ++i) {
                         if (ids[i] == padding_idx) continue;
                         float* dst = dweight + ids[i] * C;
                         const float* src = dout + i * C;
#pragma omp simd
                         for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
                     }
                 });
}

// The device path (cuda/kernels/embedding.cuh), the ids already checked and copied there.
Tensor embedding_cuda(const Tensor& weight, const Tensor& device_ids, const Shape& out_shape, int64_t padding_idx) {
    const int64_t n = device_ids.numel(), C = weight.size(1);
    Tensor y = empty(out_shape, DType::F32, Device::CUDA);
    cuda::embedding_forward(y.f32(), weight.f32(), device_ids.i32(), n, C);
    if (needs_grad({weight}))
        record(y, {weight}, [weight, device_ids, n, C, padding_idx](const Tensor& gy) {
            cuda::embedding_backward(weight.grad_buffer().f32(), gy.f32(), device_ids.i32(), n, C, padding_idx);
        });
    return y;
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& ids, int64_t padding_idx) {
    check(weight.defined() && weight.dtype() == DType::F32 && weight.dim() == 2,
          "embedding: weight must be a float32 [V, C] tensor");
    check(ids.defined() && ids.dtype() == DType::I32,
          "embedding: ids must be an int32 tensor");
    check(!ids.is_cuda(), "embedding: ids come from the CPU (a batch's collate), whatever the weight's device");
    int64_t vocab = weight.size(0), C = weight.size(1), n = ids.numel();
    check(padding_idx == kNoPadding || (padding_idx >= 0 && padding_idx < vocab),
          "embedding: padding_idx " + std::to_string(padding_idx) + " is outside the vocabulary of size " +
              std::to_string(vocab));
    const int32_t* pid = ids.i32();
    for (int64_t i = 0; i < n; ++i)
        check(pid[i] >= 0 && pid[i] < vocab,
              "embedding: id " + std::to_string(pid[i]) + " (at index " + std::to_string(i) +
                  ") is outside the vocabulary of size " + std::to_string(vocab));

    Shape out_shape = ids.shape();
    out_shape.push_back(C);
    if (weight.is_cuda()) return embedding_cuda(weight, ids.to(Device::CUDA), out_shape, padding_idx);
    Tensor y = empty(out_shape);
    embedding_forward(y.f32(), weight.f32(), pid, n, C);
    if (needs_grad({weight}))
        // A copy of the ids (small): a data loader may refill its batch before backward.
        record(y, {weight}, [weight, saved_ids = ids.clone(), n, C, padding_idx](const Tensor& gy) {
            embedding_backward(weight.grad_buffer().f32(), gy.f32(), saved_ids.i32(), n, C, padding_idx);
        });
    return y;
}

}  // namespace qdq
