#include "bench/bert_step.h"

#include <cmath>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/tape.h"

namespace qdq::bench {

namespace {

Tensor add_param(std::vector<Param>& params, const std::string& name, Tensor value) {
    value.set_requires_grad(true);
    params.push_back({name, value});
    return value;
}

Tensor normal_param(std::vector<Param>& params, const std::string& name, const Shape& shape,
                    Rng& rng) {
    Tensor t = empty(shape);
    float* p = t.f32();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = rng.normal(0.0f, 0.02f);
    return add_param(params, name, t);
}

Tensor zeros_param(std::vector<Param>& params, const std::string& name, const Shape& shape) {
    return add_param(params, name, zeros(shape));
}

Tensor ones_param(std::vector<Param>& params, const std::string& name, const Shape& shape) {
    return add_param(params, name, full(shape, 1.0f));
}

}  // namespace

EncoderLayer make_encoder_layer(std::vector<Param>& params, const std::string& prefix,
                                int64_t hidden, int64_t ffn, Rng& rng) {
    const int64_t C = hidden, F = ffn;
    EncoderLayer w;
    const std::string self = prefix + "attention.self.", attn_out = prefix + "attention.output.";
    w.query_w = normal_param(params, self + "query.weight", {C, C}, rng);
    w.query_b = zeros_param(params, self + "query.bias", {C});
    w.key_w = normal_param(params, self + "key.weight", {C, C}, rng);
    w.key_b = zeros_param(params, self + "key.bias", {C});
    w.value_w = normal_param(params, self + "value.weight", {C, C}, rng);
    w.value_b = zeros_param(params, self + "value.bias", {C});
    w.attn_out_w = normal_param(params, attn_out + "dense.weight", {C, C}, rng);
    w.attn_out_b = zeros_param(params, attn_out + "dense.bias", {C});
    w.attn_ln_gamma = ones_param(params, attn_out + "LayerNorm.weight", {C});
    w.attn_ln_beta = zeros_param(params, attn_out + "LayerNorm.bias", {C});
    w.inter_w = normal_param(params, prefix + "intermediate.dense.weight", {F, C}, rng);
    w.inter_b = zeros_param(params, prefix + "intermediate.dense.bias", {F});
    w.out_w = normal_param(params, prefix + "output.dense.weight", {C, F}, rng);
    w.out_b = zeros_param(params, prefix + "output.dense.bias", {C});
    w.out_ln_gamma = ones_param(params, prefix + "output.LayerNorm.weight", {C});
    w.out_ln_beta = zeros_param(params, prefix + "output.LayerNorm.bias", {C});
    return w;
}

Tensor encoder_layer_forward(const EncoderLayer& w, const Tensor& x, const Tensor& mask,
                             int64_t heads, float dropout_p, float eps, bool training, Rng& rng) {
    const int64_t head_dim = x.size(-1) / heads;
    Tensor q = split_heads(linear(x, w.query_w, w.query_b), heads);  // [B, H, T, D]
    Tensor k = split_heads(linear(x, w.key_w, w.key_b), heads);
    Tensor v = split_heads(linear(x, w.value_w, w.value_b), heads);
    Tensor scores = matmul(q, k, false, true);  // [B, H, T, T]
    Tensor probs = softmax(scores, 1.0f / std::sqrt((float)head_dim), mask);
    probs = dropout(probs, dropout_p, training, rng);
    Tensor context = merge_heads(matmul(probs, v));  // [B, T, C]
    Tensor attn = dropout(linear(context, w.attn_out_w, w.attn_out_b), dropout_p, training, rng);
    Tensor h = add_layer_norm(attn, x, w.attn_ln_gamma, w.attn_ln_beta, eps);
    Tensor inter = gelu(linear(h, w.inter_w, w.inter_b));  // [B, T, F]
    Tensor out = dropout(linear(inter, w.out_w, w.out_b), dropout_p, training, rng);
    return add_layer_norm(out, h, w.out_ln_gamma, w.out_ln_beta, eps);
}

Bert make_bert(const BertConfig& config, Rng& rng) {
    Bert m;
    m.config = config;
    const int64_t C = config.hidden;
    auto& ps = m.params;
    m.word_emb = normal_param(ps, "bert.embeddings.word_embeddings.weight", {config.vocab, C}, rng);
    m.position_emb = normal_param(ps, "bert.embeddings.position_embeddings.weight",
                                  {config.max_positions, C}, rng);
    m.token_type_emb = normal_param(ps, "bert.embeddings.token_type_embeddings.weight",
                                    {config.type_vocab, C}, rng);
    m.emb_ln_gamma = ones_param(ps, "bert.embeddings.LayerNorm.weight", {C});
    m.emb_ln_beta = zeros_param(ps, "bert.embeddings.LayerNorm.bias", {C});
    for (int64_t l = 0; l < config.layers; ++l)
        m.layers.push_back(make_encoder_layer(
            ps, "bert.encoder.layer." + std::to_string(l) + ".", C, config.ffn, rng));
    m.pooler_w = normal_param(ps, "bert.pooler.dense.weight", {C, C}, rng);
    m.pooler_b = zeros_param(ps, "bert.pooler.dense.bias", {C});
    m.classifier_w = normal_param(ps, "classifier.weight", {config.labels, C}, rng);
    m.classifier_b = zeros_param(ps, "classifier.bias", {config.labels});
    return m;
}

Batch make_batch(int64_t batch, int64_t seq, int64_t vocab, int64_t labels, Rng& rng) {
    std::vector<int32_t> ids((size_t)(batch * seq), 0), positions((size_t)seq), targets;
    std::vector<float> mask((size_t)(batch * seq), 0.0f);
    for (int64_t b = 0; b < batch; ++b) {
        int64_t length = seq - 16 * (b % 4);
        for (int64_t t = 0; t < seq; ++t) {
            if (t < length)
                ids[(size_t)(b * seq + t)] = 1 + (int32_t)(rng.next_u64() % (uint64_t)(vocab - 1));
            else
                mask[(size_t)(b * seq + t)] = -10000.0f;
        }
        targets.push_back((int32_t)(rng.next_u64() % (uint64_t)labels));
    }
    for (int64_t t = 0; t < seq; ++t) positions[(size_t)t] = (int32_t)t;
    Batch out;
    out.input_ids = from_ints({batch, seq}, ids);
    out.token_type_ids = zeros({batch, seq}, DType::I32);
    out.position_ids = from_ints({1, seq}, positions);
    out.mask = from_vector({batch, 1, 1, seq}, mask);
    out.labels = from_ints({batch}, targets);
    return out;
}

Tensor bert_logits(const Bert& m, const Batch& batch, bool training, Rng& rng) {
    const BertConfig& c = m.config;
    const int64_t B = batch.input_ids.size(0);
    Tensor x = add(embedding(m.word_emb, batch.input_ids),
                   embedding(m.token_type_emb, batch.token_type_ids));  // [B, T, C]
    x = add(x, embedding(m.position_emb, batch.position_ids));         // + [1, T, C]
    x = dropout(layer_norm(x, m.emb_ln_gamma, m.emb_ln_beta, c.eps), c.dropout, training, rng);
    for (const EncoderLayer& layer : m.layers)
        x = encoder_layer_forward(layer, x, batch.mask, c.heads, c.dropout, c.eps, training, rng);
    Tensor cls = reshape(slice(x, 1, 0, 1), {B, c.hidden});  // the [CLS] token
    Tensor pooled = tanh(linear(cls, m.pooler_w, m.pooler_b));
    pooled = dropout(pooled, c.dropout, training, rng);
    return linear(pooled, m.classifier_w, m.classifier_b);
}

float train_step(Bert& m, const Batch& batch, float lr, Rng& rng) {
    Tensor loss = cross_entropy(bert_logits(m, batch, true, rng), batch.labels);
    backward(loss);
    NoGradGuard no_grad;
    for (Param& p : m.params) {
        Tensor grad = p.value.grad();
        if (!grad.defined()) continue;
        float* w = p.value.f32();
        const float* g = grad.f32();
        parallel_for(p.value.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) w[i] -= lr * g[i];
        });
        p.value.zero_grad();
    }
    return loss.item();
}

float eval_step(const Bert& m, const Batch& batch, Rng& rng) {
    NoGradGuard no_grad;
    return cross_entropy(bert_logits(m, batch, false, rng), batch.labels).item();
}

double bert_flops(const Bert& m, int64_t batch, int64_t seq, bool training) {
    double params = 0;
    for (const Param& p : m.params)
        if (p.name.rfind("bert.embeddings.", 0) != 0) params += (double)p.value.numel();
    // QKᵀ and P·V: 2 * T * C multiply-adds per token each, per layer.
    double attention = (double)m.config.layers * 4.0 * (double)seq * (double)m.config.hidden;
    double per_token = 2.0 * params + attention;
    return (training ? 3.0 : 1.0) * per_token * (double)(batch * seq);
}

}  // namespace qdq::bench
