// The basic layers, with torch.nn's parameter names and layouts: Linear (weight [out, in]),
// Embedding, LayerNorm (weight, bias), Dropout. Parameters start as Hugging Face's BERT
// initialisation: weights normal(0, initializer_range) (nn/init.h), biases 0, LayerNorm weight 1.
#pragma once

#include "autograd/ops.h"
#include "autograd/rng.h"
#include "nn/init.h"
#include "nn/module.h"

namespace qdq::nn {

class Linear : public Module {
public:
    Linear(int64_t in_features, int64_t out_features, bool bias, float init_std, Rng& init_rng);
    Tensor forward(const Tensor& x) const;

    Tensor weight;  // [out, in]
    Tensor bias;    // [out], undefined without bias
    // PQ's QuantLinear: both operands fake-quantized when attached (module-owned, see Module).
    TensorQuantizer* input_quantizer = nullptr;
    TensorQuantizer* weight_quantizer = nullptr;
};

// torch.nn.Embedding, padding_idx included: that row starts at zero and receives no gradient
// from the lookup (it still loads, saves and trains through anything else that reads it, such
// as a tied decoder).
class Embedding : public Module {
public:
    Embedding(int64_t count, int64_t dim, float init_std, Rng& init_rng, int64_t padding_idx = kNoPadding);
    Tensor forward(const Tensor& ids) const;

    Tensor weight;  // [count, dim]
    int64_t padding_idx;
};

class LayerNorm : public Module {
public:
    LayerNorm(int64_t dim, float eps);
    Tensor forward(const Tensor& x) const;
    Tensor forward(const Tensor& x, const Tensor& residual) const;  // LayerNorm(x + residual)

    Tensor weight;  // [dim], ones
    Tensor bias;    // [dim], zeros
    float eps;
};

class Dropout : public Module {
public:
    explicit Dropout(float p) : p(p) {}
    Tensor forward(const Tensor& x, Rng& rng) const { return dropout(x, p, is_training(), rng); }

    float p;
};

}  // namespace qdq::nn
