// BERT's encoder as Hugging Face's BertModel builds it, with the same module names so that
// parameter keys match HF's state_dict. Shapes: B batch, T sequence, C hidden, H heads.
#pragma once

#include <memory>
#include <vector>

#include "autograd/rng.h"
#include "nn/bert_config.h"
#include "nn/layers.h"

namespace qdq::nn {

// Token ids, segment ids and padding mask of one batch: int32 [B, T] each.
struct BertInputs {
    Tensor input_ids;
    Tensor token_type_ids;  // undefined means all segment 0
    Tensor attention_mask;  // 1 for real tokens, 0 for padding; undefined means all 1
};

class BertEmbeddings : public Module {
public:
    BertEmbeddings(const BertConfig& c, Rng& init_rng);
    Tensor forward(const BertInputs& in, Rng& rng) const;  // [B, T, C]

    Embedding word_embeddings, position_embeddings, token_type_embeddings;
    LayerNorm layer_norm;
    Dropout dropout;
};

class BertSelfAttention : public Module {
public:
    BertSelfAttention(const BertConfig& c, Rng& init_rng);
    // mask: additive [B, 1, 1, T]
    Tensor forward(const Tensor& x, const Tensor& mask, Rng& rng) const;

    int64_t heads;
    Linear query, key, value;
    Dropout dropout;  // on the attention probabilities
    // QDQBERT's quantizers of both operands of Q·Kᵀ and of probabilities·V (attached, or null).
    TensorQuantizer* matmul_q_input_quantizer = nullptr;
    TensorQuantizer* matmul_k_input_quantizer = nullptr;
    TensorQuantizer* matmul_v_input_quantizer = nullptr;
    TensorQuantizer* matmul_a_input_quantizer = nullptr;
};

// dense → dropout → LayerNorm(· + residual); BertSelfOutput and BertOutput are both this.
class BertResidualOutput : public Module {
public:
    BertResidualOutput(int64_t in_features, const BertConfig& c, Rng& init_rng);
    Tensor forward(const Tensor& x, const Tensor& residual, Rng& rng) const;

    Linear dense;
    LayerNorm layer_norm;
    Dropout dropout;
    // QDQBERT's quantizers of the two addends before LayerNorm: the layer's own output and the
    // residual input (attached, or null).
    TensorQuantizer* add_local_input_quantizer = nullptr;
    TensorQuantizer* add_residual_input_quantizer = nullptr;
};

class BertLayer : public Module {
public:
    BertLayer(const BertConfig& c, Rng& init_rng);
    Tensor forward(const Tensor& x, const Tensor& mask, Rng& rng) const;

    // Registered under HF's nested names: attention.self, attention.output,
    // intermediate.dense, output.
    BertSelfAttention self_attention;
    BertResidualOutput attention_output;
    Linear intermediate;  // followed by GELU
    BertResidualOutput output;
};

class BertPooler : public Module {
public:
    BertPooler(const BertConfig& c, Rng& init_rng);
    Tensor forward(const Tensor& sequence) const;  // tanh(dense(sequence[:, 0])) -> [B, C]

    Linear dense;
};

class BertModel : public Module {
public:
    BertModel(const BertConfig& c, bool with_pooler, Rng& init_rng);

    Tensor forward(const BertInputs& in, Rng& rng) const;  // sequence output [B, T, C]
    Tensor pool(const Tensor& sequence) const;            // needs with_pooler

    BertConfig config;
    BertEmbeddings embeddings;
    std::vector<std::unique_ptr<BertLayer>> layers;  // registered as encoder.layer.<i>
    std::unique_ptr<BertPooler> pooler;
};

// HF's extended attention mask: 0 where attention_mask is 1, the lowest float where it is 0,
// shaped [B, 1, 1, T] to broadcast over heads and query positions.
Tensor additive_attention_mask(const Tensor& attention_mask);

}  // namespace qdq::nn
