// The task models, named as Hugging Face's so their state_dict keys match:
// BertForSequenceClassification (bert.*, classifier.*), BertForQuestionAnswering
// (bert.* without pooler, qa_outputs.*), BertForMaskedLM (bert.* without pooler,
// cls.predictions.*, decoder tied to the word embeddings).
// Each owns the RNG its dropout draws from, so a checkpoint can save and restore it.
#pragma once

#include "nn/bert.h"

namespace qdq::nn {

// Mean cross-entropy of logits [N, K] against int32 labels [N]; with label_smoothing ε, Hugging
// Face's LabelSmoother (torch's cross_entropy label_smoothing alike): (1 − ε)·that + ε·the mean
// over the rows and the classes of −log p.
Tensor smoothed_cross_entropy(const Tensor& logits, const Tensor& labels, float label_smoothing);

class BertForSequenceClassification : public Module {
public:
    BertForSequenceClassification(const BertConfig& c, Rng& init_rng);
    Tensor forward(const BertInputs& in);  // logits [B, num_labels]
    // smoothed_cross_entropy against int32 labels [B].
    static Tensor loss(const Tensor& logits, const Tensor& labels, float label_smoothing = 0.0f);

    BertModel bert;
    Dropout dropout;
    Linear classifier;
    Rng dropout_rng;
};

struct SpanLogits {
    Tensor start;  // [B, T]
    Tensor end;    // [B, T]
};

class BertForQuestionAnswering : public Module {
public:
    BertForQuestionAnswering(const BertConfig& c, Rng& init_rng);
    SpanLogits forward(const BertInputs& in);
    // HF's loss: (CE(start) + CE(end)) / 2, positions clamped to T and position T ignored.
    static Tensor loss(const SpanLogits& logits, const Tensor& start_positions,
                       const Tensor& end_positions);

    BertModel bert;
    Linear qa_outputs;  // [2, C]: start, end
    Rng dropout_rng;
};

struct MaskedLMLogits {
    Tensor logits;  // [M, V]
    Tensor labels;  // [M] int32
};

class BertForMaskedLM : public Module {
public:
    BertForMaskedLM(const BertConfig& c, Rng& init_rng);
    Tensor forward(const BertInputs& in);  // logits [B, T, V]
    // Logits at the M positions whose int32 label [B, T] is not -100 only, in row-major order,
    // with their labels. The head's cost and its [B, T, V] output (500 MB at 32x128 and BERT's
    // vocabulary) shrink to the ~15% of positions the loss looks at; loss() of the result equals
    // loss(forward(in), labels).
    MaskedLMLogits forward_masked(const BertInputs& in, const Tensor& labels);
    // Mean cross-entropy over positions whose int32 label [B, T] (or [M]) is not -100; with
    // label_smoothing ε, smoothed_cross_entropy over those positions, as HF's LabelSmoother
    // leaves out the positions labelled -100.
    static Tensor loss(const Tensor& logits, const Tensor& labels, float label_smoothing = 0.0f);

    BertModel bert;
    Linear transform;          // cls.predictions.transform.dense, then GELU
    LayerNorm transform_norm;  // cls.predictions.transform.LayerNorm
    Tensor decoder_bias;       // cls.predictions.bias; the decoder weight is the word embeddings
    Rng dropout_rng;
};

}  // namespace qdq::nn
