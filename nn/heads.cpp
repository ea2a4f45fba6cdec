#include "nn/heads.h"

#include <algorithm>

#include "autograd/ops.h"

namespace qdq::nn {

BertForSequenceClassification::BertForSequenceClassification(const BertConfig& c, Rng& init_rng)
    : bert(c, true, init_rng),
      dropout(c.hidden_dropout_prob),
      classifier(c.hidden_size, c.num_labels, true, c.initializer_range, init_rng),
      dropout_rng(init_rng.next_u64()) {
    register_module("bert", bert);
    register_module("dropout", dropout);
    register_module("classifier", classifier);
}

Tensor BertForSequenceClassification::forward(const BertInputs& in) {
    Tensor pooled = bert.pool(bert.forward(in, dropout_rng));
    return classifier.forward(dropout.forward(pooled, dropout_rng));
}

Tensor smoothed_cross_entropy(const Tensor& logits, const Tensor& labels, float label_smoothing) {
    const Tensor nll = cross_entropy(logits, labels);
    if (label_smoothing == 0.0f) return nll;
    const Tensor smooth = mul_scalar(mean_all(log_softmax(logits)), -1.0f);
    return add(mul_scalar(nll, 1.0f - label_smoothing), mul_scalar(smooth, label_smoothing));
}

Tensor BertForSequenceClassification::loss(const Tensor& logits, const Tensor& labels, float label_smoothing) {
    return smoothed_cross_entropy(logits, labels, label_smoothing);
}

BertForQuestionAnswering::BertForQuestionAnswering(const BertConfig& c, Rng& init_rng)
    : bert(c, false, init_rng),
      qa_outputs(c.hidden_size, 2, true, c.initializer_range, init_rng),
      dropout_rng(init_rng.next_u64()) {
    register_module("bert", bert);
    register_module("qa_outputs", qa_outputs);
}

SpanLogits BertForQuestionAnswering::forward(const BertInputs& in) {
    Tensor logits = qa_outputs.forward(bert.forward(in, dropout_rng));  // [B, T, 2]
    Shape bt = {logits.size(0), logits.size(1)};
    return {reshape(slice(logits, 2, 0, 1), bt), reshape(slice(logits, 2, 1, 2), bt)};
}

Tensor BertForQuestionAnswering::loss(const SpanLogits& logits, const Tensor& start_positions,
                                      const Tensor& end_positions) {
    int64_t T = logits.start.size(1);
    // A position outside the window (HF clamps it to T) contributes nothing.
    auto clamped = [T](const Tensor& positions) {
        Tensor out = positions.clone();
        int32_t* p = out.i32();
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = std::clamp<int32_t>(p[i], 0, (int32_t)T);
        return out;
    };
    Tensor start = cross_entropy(logits.start, clamped(start_positions), (int32_t)T);
    Tensor end = cross_entropy(logits.end, clamped(end_positions), (int32_t)T);
    return mul_scalar(add(start, end), 0.5f);
}

BertForMaskedLM::BertForMaskedLM(const BertConfig& c, Rng& init_rng)
    : bert(c, false, init_rng),
      transform(c.hidden_size, c.hidden_size, true, c.initializer_range, init_rng),
      transform_norm(c.hidden_size, c.layer_norm_eps),
      dropout_rng(init_rng.next_u64()) {
    register_module("bert", bert);
    register_module("cls.predictions.transform.dense", transform);
    register_module("cls.predictions.transform.LayerNorm", transform_norm);
    decoder_bias = register_parameter("cls.predictions.bias", zeros({c.vocab_size}));
}

Tensor BertForMaskedLM::forward(const BertInputs& in) {
    Tensor h = transform_norm.forward(gelu(transform.forward(bert.forward(in, dropout_rng))));
    return linear(h, bert.embeddings.word_embeddings.weight, decoder_bias);
}

namespace {

// The positions (row-major) whose int32 label is not -100, as an index tensor [M], and their
// labels [M].
struct LabelledPositions {
    Tensor positions, labels;
};

LabelledPositions labelled_positions(const Tensor& labels) {
    std::vector<int32_t> positions, kept;
    const int32_t* l = labels.i32();
    for (int64_t i = 0; i < labels.numel(); ++i) {
        if (l[i] == -100) continue;
        positions.push_back((int32_t)i);
        kept.push_back(l[i]);
    }
    return {from_ints({(int64_t)positions.size()}, positions), from_ints({(int64_t)kept.size()}, kept)};
}

}  // namespace

MaskedLMLogits BertForMaskedLM::forward_masked(const BertInputs& in, const Tensor& labels) {
    check(labels.defined() && labels.dtype() == DType::I32 && labels.shape() == in.input_ids.shape(),
          "BertForMaskedLM::forward_masked: labels must be int32 of input_ids' shape");
    const LabelledPositions labelled = labelled_positions(labels);
    Tensor hidden = bert.forward(in, dropout_rng);  // [B, T, C]
    // embedding() is a row gather whose backward scatter-adds, here into the encoder's output.
    Tensor picked = embedding(reshape(hidden, {-1, hidden.size(-1)}), labelled.positions);  // [M, C]
    Tensor h = transform_norm.forward(gelu(transform.forward(picked)));
    return {linear(h, bert.embeddings.word_embeddings.weight, decoder_bias), labelled.labels};
}

Tensor BertForMaskedLM::loss(const Tensor& logits, const Tensor& labels, float label_smoothing) {
    const Tensor rows = reshape(logits, {-1, logits.size(-1)});
    if (label_smoothing == 0.0f) return cross_entropy(rows, reshape(labels, {-1}));
    const LabelledPositions labelled = labelled_positions(labels);
    // forward_masked's logits are all labelled: nothing to gather.
    const Tensor picked = labelled.positions.numel() == rows.size(0) ? rows : embedding(rows, labelled.positions);
    return smoothed_cross_entropy(picked, labelled.labels, label_smoothing);
}

}  // namespace qdq::nn
