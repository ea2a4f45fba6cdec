#include "nn/layers.h"

#include <algorithm>
#include <vector>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "quant/integer_product.h"

namespace qdq::nn {

Tensor normal_tensor(const Shape& shape, float stddev, Rng& rng) {
    // The stream is drawn in order, a block at a time, and Box-Muller's log and cos, most of the
    // time at BERT's sizes, run on every core: the values of rng.normal called element by element.
    constexpr int64_t kBlock = int64_t{1} << 16;
    Tensor t = empty(shape);
    float* p = t.f32();
    std::vector<uint64_t> draws((size_t)(2 * std::min(kBlock, t.numel())));
    for (int64_t begin = 0; begin < t.numel(); begin += kBlock) {
        const int64_t n = std::min(kBlock, t.numel() - begin);
        for (int64_t i = 0; i < 2 * n; ++i) draws[(size_t)i] = rng.next_u64();
        parallel_for(n, 4096, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) p[begin + i] = normal_from_draws(draws[2 * i], draws[2 * i + 1], 0.0f, stddev);
        });
    }
    return t;
}

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias, float init_std, Rng& init_rng) {
    weight = register_parameter("weight", normal_tensor({out_features, in_features}, init_std, init_rng));
    if (has_bias) bias = register_parameter("bias", zeros({out_features}));
}

Tensor Linear::forward(const Tensor& x) const {
    return quantized_linear(x, input_quantizer, weight, weight_quantizer, bias);
}

Embedding::Embedding(int64_t count, int64_t dim, float init_std, Rng& init_rng, int64_t padding_idx)
    : padding_idx(padding_idx) {
    check(padding_idx == kNoPadding || (padding_idx >= 0 && padding_idx < count),
          "Embedding: padding_idx " + std::to_string(padding_idx) + " is outside the " + std::to_string(count) + " rows");
    Tensor init = normal_tensor({count, dim}, init_std, init_rng);
    if (padding_idx != kNoPadding) std::fill_n(init.f32() + padding_idx * dim, dim, 0.0f);
    weight = register_parameter("weight", init);
}

Tensor Embedding::forward(const Tensor& ids) const { return embedding(weight, ids, padding_idx); }

LayerNorm::LayerNorm(int64_t dim, float eps) : eps(eps) {
    weight = register_parameter("weight", full({dim}, 1.0f));
    bias = register_parameter("bias", zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }

Tensor LayerNorm::forward(const Tensor& x, const Tensor& residual) const {
    return add_layer_norm(x, residual, weight, bias, eps);
}

}  // namespace qdq::nn
