// Differentiable ops. Each is defined, forward beside backward, in autograd/ops/<file>.cpp
// (named in the section headers below). An op records a tape node only when grad mode is on
// and one of its inputs requires grad. Inputs are float32 unless stated.
#pragma once

#include <vector>

#include "autograd/rng.h"
#include "autograd/tensor.h"

namespace qdq {

// ---- matmul.cpp --------------------------------------------------------------------------
// a [..., M, K] (or [..., K, M] with trans_a) times b [..., K, N] (or [..., N, K] with trans_b).
// Leading (batch) dims must be equal; a 2-D b is shared by every batch entry. CPU or CUDA.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x [..., in] · weightᵀ + bias; weight [out, in] as in torch.nn.Linear; bias [out] or undefined.
// CPU or CUDA.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// ---- elementwise.cpp: numpy broadcasting ----------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// Not recorded: in-place accumulation for the tape and the optimizers. Shapes must match.
void add_inplace(const Tensor& dst, const Tensor& src);

// ---- scalar.cpp ----------------------------------------------------------------------------
Tensor add_scalar(const Tensor& a, float s);
Tensor mul_scalar(const Tensor& a, float s);
Tensor pow_scalar(const Tensor& a, float exponent);

// ---- reduce.cpp ----------------------------------------------------------------------------
Tensor sum(const Tensor& a, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& a, int64_t axis, bool keepdim = false);
Tensor sum_all(const Tensor& a);   // one-element tensor of shape []
Tensor mean_all(const Tensor& a);

// ---- shape.cpp -----------------------------------------------------------------------------
Tensor reshape(const Tensor& a, const Shape& shape);  // a view; one dim may be -1
Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1);
Tensor permute(const Tensor& a, const std::vector<int64_t>& dims);
Tensor split_heads(const Tensor& x, int64_t heads);  // [B, T, H*D] -> [B, H, T, D]
Tensor merge_heads(const Tensor& x);                  // [B, H, T, D] -> [B, T, H*D]
// [start, end) along axis, 0 <= start <= end <= size(axis); a copy.
Tensor slice(const Tensor& a, int64_t axis, int64_t start, int64_t end);
// Parts must agree on every axis but `axis`.
Tensor concat(const std::vector<Tensor>& parts, int64_t axis);

// ---- embedding.cpp -------------------------------------------------------------------------
// weight [V, C], ids int32 [...] in [0, V) -> [..., C]; backward scatter-adds into weight's
// gradient, except at the positions whose id is padding_idx (torch's padding_idx: that row gets
// no gradient from the lookup, though it is read like any other). kNoPadding: every id trains.
constexpr int64_t kNoPadding = -1;
Tensor embedding(const Tensor& weight, const Tensor& ids, int64_t padding_idx = kNoPadding);

// ---- activation.cpp ------------------------------------------------------------------------
Tensor gelu(const Tensor& x);  // exact erf form, as BERT's "gelu"
Tensor tanh(const Tensor& x);

// ---- softmax.cpp ---------------------------------------------------------------------------
// softmax(scale * x + mask) over the last axis. mask is additive (0 or a large negative),
// broadcastable to x with x's last dim (attention uses [B, 1, 1, T] against [B, H, T, T]), or
// undefined. No gradient flows to the mask.
Tensor softmax(const Tensor& x, float scale = 1.0f, const Tensor& mask = Tensor());

// ---- cross_entropy.cpp ---------------------------------------------------------------------
Tensor log_softmax(const Tensor& x);  // over the last axis
// Mean over rows whose label != ignore_index of -log softmax(logits)[label].
// logits [N, C], labels int32 [N]. All rows ignored gives 0 (PyTorch gives NaN).
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, int32_t ignore_index = -100);
// Knowledge distillation's KL(teacher ‖ student) at temperature T over rows of logits [N, C]:
// the mean over the N rows of Σ_j p_j·(log p_j − log q_j), p = softmax(teacher / T),
// q = softmax(student / T), as torch.nn.functional.kl_div(log_softmax(student / T),
// softmax(teacher / T), reduction='batchmean'). No gradient flows to the teacher. N = 0 gives 0.
Tensor softmax_kl_div(const Tensor& student, const Tensor& teacher, float temperature);

// ---- layernorm.cpp -------------------------------------------------------------------------
// Over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta, var biased as in PyTorch.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps);
// layer_norm(x + residual, ...) in one pass: BERT's Add & Norm. Both addends get the gradient.
Tensor add_layer_norm(const Tensor& x, const Tensor& residual, const Tensor& gamma,
                      const Tensor& beta, float eps);

// ---- dropout.cpp ---------------------------------------------------------------------------
// Inverted dropout: zero with probability p, scale the rest by 1/(1-p). Identity when
// !training or p == 0 (x itself is returned and nothing drawn or recorded); p must be in [0, 1).
// Otherwise draws one key from rng per call (see rng.h).
Tensor dropout(const Tensor& x, float p, bool training, Rng& rng);

}  // namespace qdq
