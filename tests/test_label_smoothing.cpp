// Hugging Face's LabelSmoother (label_smoothing_factor) on a classifier's logits and on a masked
// LM's, against its formula in double: over the rows r whose label y_r is not -100, M of them,
// the loss (1 − ε)·mean_r(lse_r − x[r, y_r]) + ε·mean_{r,c}(lse_r − x[r, c]) and its gradient
// ((1 − ε)·(p − onehot(y_r)) + ε·(p − 1/C)) / M, zero on the rows left out.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/tape.h"
#include "nn/heads.h"

using namespace qdq;
using namespace qdq::nn;

namespace {

struct SmoothedLoss {
    double loss = 0;
    std::vector<double> grad;  // of the loss by each logit
};

SmoothedLoss hugging_face_label_smoother(const std::vector<float>& x, const std::vector<int32_t>& y, int64_t C,
                                         double epsilon) {
    const int64_t rows = (int64_t)y.size();
    int64_t M = 0;
    for (int32_t label : y) M += label != -100;
    SmoothedLoss out{0, std::vector<double>(x.size(), 0.0)};
    for (int64_t r = 0; r < rows; ++r) {
        if (y[(size_t)r] == -100) continue;
        double sum = 0;
        for (int64_t c = 0; c < C; ++c) sum += std::exp((double)x[(size_t)(r * C + c)]);
        const double lse = std::log(sum);
        for (int64_t c = 0; c < C; ++c) {
            const double xc = x[(size_t)(r * C + c)];
            const bool target = c == y[(size_t)r];
            out.loss += epsilon * (lse - xc) / (double)(M * C) + (target ? (1 - epsilon) * (lse - xc) / (double)M : 0);
            const double p = std::exp(xc - lse);
            out.grad[(size_t)(r * C + c)] = ((1 - epsilon) * (p - target) + epsilon * (p - 1.0 / (double)C)) / (double)M;
        }
    }
    return out;
}

}  // namespace

TEST(LabelSmoothing, SequenceClassificationLossIsHuggingFaces) {
    const int64_t B = 3, C = 4;
    const std::vector<float> x = {0.5f, -1.25f, 2.0f, 0.0f, 3.0f, 1.0f, -2.0f, 0.25f, -0.5f, -0.5f, 1.5f, 4.0f};
    const std::vector<int32_t> y = {2, 0, 1};
    const float epsilon = 0.1f;
    Tensor logits = from_vector({B, C}, x);
    logits.set_requires_grad();
    Tensor loss = BertForSequenceClassification::loss(logits, from_ints({B}, y), epsilon);
    backward(loss);
    const SmoothedLoss expected = hugging_face_label_smoother(x, y, C, epsilon);
    EXPECT_NEAR(loss.item(), expected.loss, 1e-6 * expected.loss);
    const std::vector<float> grad = logits.grad().to_vector();
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected.grad[i], 1e-7) << i;
    // ε = 0 is the plain cross-entropy, to the bit.
    EXPECT_EQ(BertForSequenceClassification::loss(logits, from_ints({B}, y), 0.0f).item(),
              cross_entropy(logits, from_ints({B}, y)).item());
}

// A masked LM's loss over [B, T, V] logits takes the labelled positions only, as HF's
// LabelSmoother leaves out -100; forward_masked's logits of those positions give the same loss.
TEST(LabelSmoothing, MaskedLMLossTakesTheMaskedPositionsOnly) {
    const BertConfig c{.vocab_size = 23, .hidden_size = 16, .num_hidden_layers = 1, .num_attention_heads = 2,
                       .intermediate_size = 32, .max_position_embeddings = 16};
    Rng init(4);
    BertForMaskedLM model(c, init);
    model.eval();
    const int64_t B = 2, T = 6;
    std::vector<int32_t> ids((size_t)(B * T)), labels((size_t)(B * T), -100);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (int32_t)(5 + i * 7 % 18);
    for (size_t i : {1u, 4u, 7u, 8u, 11u}) labels[i] = (int32_t)((i * 5) % 23);
    const BertInputs in{from_ints({B, T}, ids), Tensor(), Tensor()};
    const float epsilon = 0.2f;

    Tensor logits;  // [B, T, V]
    {
        NoGradGuard no_grad;
        logits = model.forward(in);
    }
    logits.set_requires_grad();
    Tensor loss = BertForMaskedLM::loss(logits, from_ints({B, T}, labels), epsilon);
    backward(loss);
    const SmoothedLoss expected = hugging_face_label_smoother(logits.to_vector(), labels, c.vocab_size, epsilon);
    EXPECT_NEAR(loss.item(), expected.loss, 1e-6 * expected.loss);
    const std::vector<float> grad = logits.grad().to_vector();
    for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected.grad[i], 1e-7) << i;

    NoGradGuard no_grad;
    const MaskedLMLogits masked = model.forward_masked(in, from_ints({B, T}, labels));
    EXPECT_NEAR(BertForMaskedLM::loss(masked.logits, masked.labels, epsilon).item(), expected.loss, 1e-5 * expected.loss);
}
