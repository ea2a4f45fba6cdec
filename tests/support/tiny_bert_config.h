// A BERT small enough for a test to build many times: 2 layers, hidden 32, 4 heads, intermediate
// 64, vocabulary 40, 16 positions, 3 labels.
#pragma once

#include "nn/bert_config.h"

namespace qdq::testing {

inline nn::BertConfig tiny_bert_config() {
    nn::BertConfig c;
    c.vocab_size = 40;
    c.hidden_size = 32;
    c.num_hidden_layers = 2;
    c.num_attention_heads = 4;
    c.intermediate_size = 64;
    c.max_position_embeddings = 16;
    c.num_labels = 3;
    return c;
}

}  // namespace qdq::testing
