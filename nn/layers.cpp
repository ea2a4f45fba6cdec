#include "nn/layers.h"

#include <string>

#include "autograd/ops.h"
#include "quant/integer_product.h"

namespace qdq::nn {

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
    weight = register_parameter("weight", normal_tensor({count, dim}, init_std, init_rng, padding_idx));
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
