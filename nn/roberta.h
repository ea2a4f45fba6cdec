// RoBERTa weights into BERT ("transplantation"). RoBERTa's encoder is BERT's with other names
// and three differences handled here:
//  - keys: roberta.* -> bert.*; lm_head.{dense,layer_norm,bias} -> cls.predictions.*;
//    classifier.dense -> bert.pooler.dense and classifier.out_proj -> classifier.
//  - positions: RoBERTa numbers real tokens from padding_idx + 1 = 2, so its position table
//    loses its first two rows; type_vocab_size is 1.
//  - config: max_position_embeddings - 2, layer_norm_eps and the rest carried over.
// Equivalent: every output at a non-padding position, for right-padded batches (RoBERTa gives
// padding tokens position 1; here they get their index, which only changes padding outputs,
// never real ones, because padding is masked out of attention). The classification head in
// eval mode (RoBERTa's head has one more dropout, before its dense layer, so training differs).
// Not equivalent: left padding; and ids must come from RoBERTa's BPE tokenizer, not WordPiece.
#pragma once

#include <nlohmann/json.hpp>

#include "autograd/named_tensors.h"
#include "nn/bert_config.h"

namespace qdq::nn {

bool is_roberta_checkpoint(const NamedTensors& tensors);
NamedTensors roberta_to_bert(const NamedTensors& tensors);
// A RoBERTa config.json as a BertConfig (positions reduced by 2).
BertConfig bert_config_from_roberta_json(const nlohmann::json& j, const std::string& where);

}  // namespace qdq::nn
