#include "nn/bert.h"

#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "quant/integer_product.h"

namespace qdq::nn {

BertEmbeddings::BertEmbeddings(const BertConfig& c, Rng& init_rng)
    : word_embeddings(c.vocab_size, c.hidden_size, c.initializer_range, init_rng, c.pad_token_id),
      position_embeddings(c.max_position_embeddings, c.hidden_size, c.initializer_range, init_rng),
      token_type_embeddings(c.type_vocab_size, c.hidden_size, c.initializer_range, init_rng),
      layer_norm(c.hidden_size, c.layer_norm_eps),
      dropout(c.hidden_dropout_prob) {
    register_module("word_embeddings", word_embeddings);
    register_module("position_embeddings", position_embeddings);
    register_module("token_type_embeddings", token_type_embeddings);
    register_module("LayerNorm", layer_norm);
    register_module("dropout", dropout);
}

Tensor BertEmbeddings::forward(const BertInputs& in, Rng& rng) const {
    int64_t B = in.input_ids.size(0), T = in.input_ids.size(1);
    check(T <= position_embeddings.weight.size(0),
          "sequence length " + std::to_string(T) + " exceeds max_position_embeddings " +
              std::to_string(position_embeddings.weight.size(0)));
    std::vector<int32_t> positions((size_t)T);
    for (int64_t t = 0; t < T; ++t) positions[(size_t)t] = (int32_t)t;
    Tensor types = in.token_type_ids.defined() ? in.token_type_ids : zeros({B, T}, DType::I32);
    Tensor x = add(word_embeddings.forward(in.input_ids),
                   position_embeddings.forward(from_ints({T}, positions)));  // [B,T,C] + [T,C]
    return dropout.forward(layer_norm.forward(x, token_type_embeddings.forward(types)), rng);
}

BertSelfAttention::BertSelfAttention(const BertConfig& c, Rng& init_rng)
    : heads(c.num_attention_heads),
      query(c.hidden_size, c.hidden_size, true, c.initializer_range, init_rng),
      key(c.hidden_size, c.hidden_size, true, c.initializer_range, init_rng),
      value(c.hidden_size, c.hidden_size, true, c.initializer_range, init_rng),
      dropout(c.attention_probs_dropout_prob) {
    register_module("query", query);
    register_module("key", key);
    register_module("value", value);
    register_module("dropout", dropout);
}

Tensor BertSelfAttention::forward(const Tensor& x, const Tensor& mask, Rng& rng) const {
    Tensor q = split_heads(query.forward(x), heads);  // [B, H, T, D]
    Tensor k = split_heads(key.forward(x), heads);
    Tensor v = split_heads(value.forward(x), heads);
    float scale = 1.0f / std::sqrt((float)q.size(-1));
    Tensor scores = quantized_matmul(q, matmul_q_input_quantizer, k, matmul_k_input_quantizer, true);
    Tensor probs = dropout.forward(softmax(scores, scale, mask), rng);  // [B, H, T, T]
    return merge_heads(quantized_matmul(probs, matmul_a_input_quantizer, v, matmul_v_input_quantizer));
}

BertResidualOutput::BertResidualOutput(int64_t in_features, const BertConfig& c, Rng& init_rng)
    : dense(in_features, c.hidden_size, true, c.initializer_range, init_rng),
      layer_norm(c.hidden_size, c.layer_norm_eps),
      dropout(c.hidden_dropout_prob) {
    register_module("dense", dense);
    register_module("LayerNorm", layer_norm);
    register_module("dropout", dropout);
}

Tensor BertResidualOutput::forward(const Tensor& x, const Tensor& residual, Rng& rng) const {
    Tensor local = dropout.forward(dense.forward(x), rng);
    return layer_norm.forward(quantize(add_local_input_quantizer, local), quantize(add_residual_input_quantizer, residual));
}

BertLayer::BertLayer(const BertConfig& c, Rng& init_rng)
    : self_attention(c, init_rng),
      attention_output(c.hidden_size, c, init_rng),
      intermediate(c.hidden_size, c.intermediate_size, true, c.initializer_range, init_rng),
      output(c.intermediate_size, c, init_rng) {
    register_module("attention.self", self_attention);
    register_module("attention.output", attention_output);
    register_module("intermediate.dense", intermediate);
    register_module("output", output);
}

Tensor BertLayer::forward(const Tensor& x, const Tensor& mask, Rng& rng) const {
    Tensor attended = attention_output.forward(self_attention.forward(x, mask, rng), x, rng);
    return output.forward(gelu(intermediate.forward(attended)), attended, rng);
}

BertPooler::BertPooler(const BertConfig& c, Rng& init_rng)
    : dense(c.hidden_size, c.hidden_size, true, c.initializer_range, init_rng) {
    register_module("dense", dense);
}

Tensor BertPooler::forward(const Tensor& sequence) const {
    Tensor first = reshape(slice(sequence, 1, 0, 1), {sequence.size(0), sequence.size(2)});
    return tanh(dense.forward(first));
}

BertModel::BertModel(const BertConfig& c, bool with_pooler, Rng& init_rng)
    : config(c), embeddings(c, init_rng) {
    register_module("embeddings", embeddings);
    for (int i = 0; i < c.num_hidden_layers; ++i) {
        layers.push_back(std::make_unique<BertLayer>(c, init_rng));
        register_module("encoder.layer." + std::to_string(i), *layers.back());
    }
    if (with_pooler) {
        pooler = std::make_unique<BertPooler>(c, init_rng);
        register_module("pooler", *pooler);
    }
}

Tensor BertModel::forward(const BertInputs& in, Rng& rng) const {
    check(in.input_ids.dim() == 2 && in.input_ids.dtype() == DType::I32,
          "input_ids must be int32 [batch, seq], got " + shape_str(in.input_ids.shape()));
    Tensor mask = in.attention_mask.defined() ? additive_attention_mask(in.attention_mask) : Tensor();
    // The mask is made from a batch on the CPU; the attention runs where the weights are.
    if (mask.defined() && embeddings.word_embeddings.weight.is_cuda()) mask = mask.to(Device::CUDA);
    Tensor x = embeddings.forward(in, rng);
    for (const auto& layer : layers) x = layer->forward(x, mask, rng);
    return x;
}

Tensor BertModel::pool(const Tensor& sequence) const {
    check(pooler != nullptr, "this BertModel was built without a pooler");
    return pooler->forward(sequence);
}

Tensor additive_attention_mask(const Tensor& attention_mask) {
    check(attention_mask.dim() == 2 && attention_mask.dtype() == DType::I32,
          "attention_mask must be int32 [batch, seq], got " + shape_str(attention_mask.shape()));
    int64_t B = attention_mask.size(0), T = attention_mask.size(1);
    Tensor mask = empty({B, 1, 1, T});
    const int32_t* m = attention_mask.i32();
    float* out = mask.f32();
    // HF fills masked positions with the dtype's lowest value; exp() of it is exactly 0.
    for (int64_t i = 0; i < B * T; ++i) out[i] = m[i] ? 0.0f : std::numeric_limits<float>::lowest();
    return mask;
}

}  // namespace qdq::nn
