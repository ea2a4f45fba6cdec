#include "optim/clip_grad.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "autograd/parallel.h"
#include "cuda/backend.h"

namespace qdq {

namespace {

// Sums of squares run over fixed blocks, added in block order, so the norm does not depend on
// the number of threads: a resumed run on another machine clips exactly as the original.
constexpr int64_t kBlock = 1 << 14;

double block_sum_of_squares(const float* x, int64_t n) {
    // Four accumulators break the add dependency chain; doubles keep 1e8 terms exact enough.
    double acc[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; ++j) acc[j] += (double)x[i + j] * x[i + j];
    for (; i < n; ++i) acc[0] += (double)x[i] * x[i];
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

double sum_of_squares(const Tensor& grad) {
    const float* x = grad.f32();
    int64_t n = grad.numel();
    int64_t blocks = (n + kBlock - 1) / kBlock;
    if (blocks <= 1) return block_sum_of_squares(x, n);
    std::vector<double> partial((size_t)blocks);
    parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b)
            partial[(size_t)b] =
                block_sum_of_squares(x + b * kBlock, std::min(kBlock, n - b * kBlock));
    });
    double total = 0;
    for (double p : partial) total += p;
    return total;
}

void scale_in_place(const Tensor& grad, float scale) {
    float* x = grad.f32();
    parallel_for(grad.numel(), kBlock, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) x[i] *= scale;
    });
}

}  // namespace

double clip_grad_norm(const std::vector<Tensor>& params, double max_norm) {
    if (!(max_norm > 0))
        throw std::runtime_error("clip_grad_norm: max_norm must be > 0, got " +
                                 std::to_string(max_norm));
    std::vector<Tensor> grads;
    for (const Tensor& p : params) {
        Tensor g = p.grad();
        if (!g.defined()) continue;
        if (g.dtype() != DType::F32) throw std::runtime_error("clip_grad_norm: gradients must be float32");
        grads.push_back(g);
    }
    // Gradients on the GPU are summed and scaled there (cuda/kernels/grad_norm.cuh), many a launch,
    // their sums read back together: one wait for the device a step, not one a tensor.
    std::vector<cuda::DeviceFloats> on_device;
    for (const Tensor& g : grads)
        if (g.is_cuda()) on_device.push_back({g.f32(), g.numel()});
    const std::vector<double> device_sums = on_device.empty() ? std::vector<double>{} : cuda::sums_of_squares(on_device);
    double total = 0;
    size_t next_device_sum = 0;
    for (const Tensor& g : grads) total += g.is_cuda() ? device_sums[next_device_sum++] : sum_of_squares(g);
    double norm = std::sqrt(total);
    double scale = max_norm / (norm + 1e-6);
    if (scale < 1) {
        for (const Tensor& g : grads)
            if (!g.is_cuda()) scale_in_place(g, (float)scale);
        if (!on_device.empty()) cuda::scale(on_device, (float)scale);
    }
    return norm;
}

double clip_grad_norm(const std::vector<ParamGroup>& groups, double max_norm) {
    std::vector<Tensor> params;
    for (const ParamGroup& group : groups)
        for (const NamedTensor& p : group.params) params.push_back(p.tensor);
    return clip_grad_norm(params, max_norm);
}

}  // namespace qdq
