// Initial weights (nn/init.h): a jump of the stream against drawing one by one, and models built
// under a DeferredInit against models built drawing every weight at construction, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "nn/heads.h"
#include "nn/init.h"
#include "nn/state_dict.h"
#include "tests/support/tiny_bert_config.h"

using namespace qdq;
using namespace qdq::nn;

namespace {

BertConfig small_config() {
    BertConfig c = qdq::testing::tiny_bert_config();
    c.pad_token_id = 1;  // not row 0, so a zeroed row that is not the padding one shows
    return c;
}

void expect_same_state(const Module& a, const Module& b) {
    const NamedTensors x = a.state_dict(), y = b.state_dict();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(x[i].name, y[i].name);
        ASSERT_EQ(x[i].tensor.shape(), y[i].tensor.shape()) << x[i].name;
        EXPECT_EQ(0, std::memcmp(x[i].tensor.raw(), y[i].tensor.raw(), (size_t)x[i].tensor.numel() * 4)) << x[i].name;
    }
}

// The classifier's weight is the last tensor drawn, after the body's: the one a fine-tuning run
// starts from, and the one a jump that miscounts would change.
NamedTensors without_classifier(const Module& model) {
    NamedTensors out;
    for (const NamedTensor& t : model.state_dict())
        if (!t.name.starts_with("classifier.")) out.push_back({t.name, t.tensor.clone()});
    return out;
}

}  // namespace

TEST(Rng, AJumpLeavesTheStateThatDrawingOneByOneLeaves) {
    for (uint64_t seed : {uint64_t{1}, uint64_t{0x5eed5eed12345ull}}) {
        for (uint64_t n : {0ull, 1ull, 2ull, 3ull, 63ull, 64ull, 65ull, 255ull, 256ull, 1000ull, 65537ull, (1ull << 20) + 3}) {
            Rng jumped(seed), drawn(seed);
            jumped.jump(n);
            for (uint64_t i = 0; i < n; ++i) drawn.next_u64();
            EXPECT_EQ(jumped.state, drawn.state) << "seed " << seed << ", " << n << " draws";
            EXPECT_EQ(jumped.next_u64(), drawn.next_u64()) << "seed " << seed << ", " << n << " draws";
        }
    }
}

TEST(DeferredInit, AModelLeftUnloadedHoldsTheWeightsDrawnAtConstruction) {
    Rng eager_rng(7), deferred_rng(7);
    BertForMaskedLM eager(small_config(), eager_rng);
    DeferredInit deferred;
    BertForMaskedLM built(small_config(), deferred_rng);
    // The three embeddings, the pooler-less encoder's six matrices a layer, the MLM transform.
    EXPECT_EQ(DeferredInit::pending(), 3 + 2 * 6 + 1);
    EXPECT_EQ(deferred_rng.state, eager_rng.state);  // the stream was jumped, not drawn
    deferred.finish();
    EXPECT_EQ(DeferredInit::pending(), 0);
    expect_same_state(built, eager);
    EXPECT_EQ(built.dropout_rng.state, eager.dropout_rng.state);
    const std::vector<float> padding = built.bert.embeddings.word_embeddings.weight.to_vector();
    for (int64_t i = 32; i < 64; ++i) EXPECT_EQ(padding[(size_t)i], 0.0f);  // row pad_token_id = 1
}

TEST(DeferredInit, ALoadedModelDrawsOnlyWhatTheFileLacks) {
    Rng file_rng(99);
    const BertForSequenceClassification other(small_config(), file_rng);
    const NamedTensors file = without_classifier(other);

    Rng eager_rng(7);
    BertForSequenceClassification eager(small_config(), eager_rng);
    const LoadReport eager_report = load_state_dict(eager, file, "file");

    Rng deferred_rng(7);
    DeferredInit deferred;
    BertForSequenceClassification built(small_config(), deferred_rng);
    const LoadReport report = load_state_dict(built, file, "file");
    EXPECT_EQ(report.missing, eager_report.missing);
    EXPECT_EQ(report.missing, (std::vector<std::string>{"classifier.bias", "classifier.weight"}));
    EXPECT_EQ(DeferredInit::pending(), 1);  // the classifier's weight; its bias starts at zero
    deferred.finish();
    expect_same_state(built, eager);
    EXPECT_EQ(built.dropout_rng.state, eager.dropout_rng.state);
}

TEST(DeferredInit, OnlyTheOutermostScopeDraws) {
    Rng eager_rng(3), deferred_rng(3);
    BertForQuestionAnswering eager(small_config(), eager_rng);
    DeferredInit outer;
    std::unique_ptr<BertForQuestionAnswering> built;
    {
        DeferredInit inner;
        built = std::make_unique<BertForQuestionAnswering>(small_config(), deferred_rng);
        inner.finish();
        EXPECT_EQ(DeferredInit::pending(), 3 + 2 * 6 + 1);
    }
    EXPECT_EQ(DeferredInit::pending(), 3 + 2 * 6 + 1);
    outer.finish();
    expect_same_state(*built, eager);
}

TEST(DeferredInit, AScopeLeftByAnExceptionDrawsNothingAndLeavesLaterBuildsEager) {
    try {
        DeferredInit deferred;
        Rng rng(5);
        BertForQuestionAnswering abandoned(small_config(), rng);
        throw std::runtime_error("the file cannot be read");
    } catch (const std::runtime_error&) {
    }
    EXPECT_EQ(DeferredInit::pending(), 0);
    Rng later_rng(5), reference(5);
    const Tensor later = normal_tensor({4, 8}, 0.02f, later_rng);
    const std::vector<float> values = later.to_vector();
    for (float v : values) EXPECT_EQ(v, reference.normal(0.0f, 0.02f));
}
