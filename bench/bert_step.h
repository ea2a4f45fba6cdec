// A plain BERT for sequence classification built directly from the autograd ops, for the
// benchmarks only (the nn/ module tree will replace it). Parameter names are those of
// Hugging Face's BertForSequenceClassification state_dict; bench_torch.py builds the same
// network with torch.nn.functional.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/rng.h"
#include "autograd/tensor.h"

namespace qdq::bench {

struct BertConfig {
    std::string name;
    int64_t layers = 12, hidden = 768, heads = 12, ffn = 3072;
    int64_t vocab = 30522, max_positions = 512, type_vocab = 2, labels = 2;
    float dropout = 0.1f;
    float eps = 1e-12f;
};

struct Param {
    std::string name;
    Tensor value;
};

// Weights are [out, in] as in torch.nn.Linear.
struct EncoderLayer {
    Tensor query_w, query_b, key_w, key_b, value_w, value_b;
    Tensor attn_out_w, attn_out_b, attn_ln_gamma, attn_ln_beta;
    Tensor inter_w, inter_b, out_w, out_b, out_ln_gamma, out_ln_beta;
};

// Registers the layer's tensors in `params` under `prefix` (e.g. "bert.encoder.layer.0.").
// Linear weights ~ normal(0, 0.02), biases 0, LayerNorm gamma 1 and beta 0, as BERT initialises.
EncoderLayer make_encoder_layer(std::vector<Param>& params, const std::string& prefix,
                                int64_t hidden, int64_t ffn, Rng& rng);

// x [B, T, C], mask additive [B, 1, 1, T] -> [B, T, C]. `rng` feeds the three dropouts.
Tensor encoder_layer_forward(const EncoderLayer& w, const Tensor& x, const Tensor& mask,
                             int64_t heads, float dropout, float eps, bool training, Rng& rng);

struct Bert {
    BertConfig config;
    std::vector<Param> params;  // every trainable tensor, in state_dict order
    Tensor word_emb, position_emb, token_type_emb, emb_ln_gamma, emb_ln_beta;
    std::vector<EncoderLayer> layers;
    Tensor pooler_w, pooler_b, classifier_w, classifier_b;
};

Bert make_bert(const BertConfig& config, Rng& rng);

struct Batch {
    Tensor input_ids;       // int32 [B, T], 0 (PAD) after each sequence's length
    Tensor token_type_ids;  // int32 [B, T], all 0
    Tensor position_ids;    // int32 [1, T]
    Tensor mask;            // float [B, 1, 1, T]: 0 on tokens, -10000 on padding
    Tensor labels;          // int32 [B]
};

// Sequence b has length T - 16 * (b % 4): a quarter of the rows are full, the rest padded.
// bench_torch.py uses the same lengths.
Batch make_batch(int64_t batch, int64_t seq, int64_t vocab, int64_t labels, Rng& rng);

Tensor bert_logits(const Bert& model, const Batch& batch, bool training, Rng& rng);  // [B, labels]

// Forward, cross-entropy, backward, then p -= lr * grad for every parameter. Returns the loss.
float train_step(Bert& model, const Batch& batch, float lr, Rng& rng);
// Evaluation forward (no tape, dropout off). Returns the loss.
float eval_step(const Bert& model, const Batch& batch, Rng& rng);

// Model FLOPs as PERF-NOTES counts them: 2 (forward) or 6 (training) x non-embedding
// parameters x tokens, plus the two attention matmuls (x1 or x3).
double bert_flops(const Bert& model, int64_t batch, int64_t seq, bool training);

}  // namespace qdq::bench
