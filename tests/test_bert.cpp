// The BERT model against tests/fixtures/make_bert_reference.py: a PyTorch BERT with Hugging
// Face's semantics and parameter names, saved as safetensors. Logits, loss and every
// parameter gradient of the three heads must match.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <map>

#include "autograd/tape.h"
#include "io/safetensors.h"
#include "nn/heads.h"
#include "nn/pretrained.h"
#include "nn/roberta.h"
#include "nn/state_dict.h"
#include "tests/support/gradcheck.h"
#include "tests/support/thread_count.h"

using namespace qdq;
using namespace qdq::nn;
using qdq::testing::expect_close;

namespace {

const std::string kDir = std::string(QDQ_FIXTURE_DIR) + "/bert_tiny/";

// float32 forward through two layers, then backward: PyTorch and we sum in different orders
// (GEMM blocking, softmax and LayerNorm reductions), so agreement is to ~1e-5 relative on
// well-conditioned values; 1e-4 relative plus 1e-5 of the tensor's scale absorbs the
// cancellations in gradient entries that are near zero.
constexpr float kRtol = 1e-4f;

std::map<std::string, Tensor> load_expected(const std::string& head) {
    std::map<std::string, Tensor> out;
    for (NamedTensor& t : load_safetensors(kDir + head + ".expected.safetensors").tensors)
        out[t.name] = t.tensor;
    return out;
}

float max_abs(const Tensor& t) {
    float m = 0;
    for (float v : t.to_vector()) m = std::max(m, std::fabs(v));
    return m;
}

void expect_matches(const Tensor& actual, const Tensor& expected, const std::string& what) {
    expect_close(actual, expected, kRtol, 1e-5f * std::max(1.0f, max_abs(expected)), what.c_str());
}

template <typename Model>
void load_fixture_weights(Model& model, const std::string& head) {
    LoadReport report =
        load_state_dict(model, load_safetensors(kDir + head + ".safetensors").tensors, head);
    EXPECT_TRUE(report.missing.empty()) << report.summary();
    EXPECT_TRUE(report.unexpected.empty()) << report.summary();
}

void expect_parameter_gradients(const Module& model, std::map<std::string, Tensor>& expected) {
    for (const NamedTensor& p : model.named_parameters()) {
        ASSERT_TRUE(expected.count("grad." + p.name)) << "fixture lacks grad for " << p.name;
        ASSERT_TRUE(p.tensor.grad().defined()) << p.name << " received no gradient";
        expect_matches(p.tensor.grad(), expected["grad." + p.name], "grad " + p.name);
    }
}

BertInputs inputs_from(std::map<std::string, Tensor>& e) {
    return {e["input_ids"], e["token_type_ids"], e["attention_mask"]};
}

BertConfig fixture_config() { return load_bert_config(kDir + "config.json"); }

}  // namespace

TEST(Bert, SequenceClassificationMatchesPyTorch) {
    auto e = load_expected("seqcls");
    Rng init(1);
    BertForSequenceClassification model(fixture_config(), init);
    load_fixture_weights(model, "seqcls");
    model.eval();
    Tensor logits = model.forward(inputs_from(e));
    Tensor loss = BertForSequenceClassification::loss(logits, e["labels"]);
    expect_matches(logits, e["logits"], "logits");
    expect_matches(reshape(loss, {1}), e["loss"], "loss");
    backward(loss);
    expect_parameter_gradients(model, e);
}

TEST(Bert, QuestionAnsweringMatchesPyTorch) {
    auto e = load_expected("qa");
    Rng init(1);
    BertForQuestionAnswering model(fixture_config(), init);
    load_fixture_weights(model, "qa");
    model.eval();
    SpanLogits logits = model.forward(inputs_from(e));
    Tensor positions = e["labels"];  // [2, B]: start row, end row
    int32_t B = (int32_t)positions.size(1);
    const int32_t* p = positions.i32();
    Tensor start = from_ints({B}, {p, p + B}), end = from_ints({B}, {p + B, p + 2 * B});
    Tensor loss = BertForQuestionAnswering::loss(logits, start, end);
    expect_matches(logits.start, e["start_logits"], "start_logits");
    expect_matches(logits.end, e["end_logits"], "end_logits");
    expect_matches(reshape(loss, {1}), e["loss"], "loss");
    backward(loss);
    expect_parameter_gradients(model, e);
}

TEST(Bert, MaskedLMMatchesPyTorchWithTiedDecoder) {
    auto e = load_expected("mlm");
    Rng init(1);
    BertForMaskedLM model(fixture_config(), init);
    load_fixture_weights(model, "mlm");
    model.eval();
    Tensor logits = model.forward(inputs_from(e));
    Tensor loss = BertForMaskedLM::loss(logits, e["labels"]);
    expect_matches(logits, e["logits"], "logits");
    expect_matches(reshape(loss, {1}), e["loss"], "loss");
    backward(loss);
    // The word embeddings' gradient includes the decoder's contribution (weights are tied).
    expect_parameter_gradients(model, e);
}

TEST(Bert, TrainingModeWithoutDropoutMatchesTheReference) {
    auto e = load_expected("seqcls");
    BertConfig c = fixture_config();
    c.hidden_dropout_prob = 0;
    c.attention_probs_dropout_prob = 0;
    Rng init(1);
    BertForSequenceClassification model(c, init);
    load_fixture_weights(model, "seqcls");
    model.train();
    Tensor logits = model.forward(inputs_from(e));
    expect_matches(logits, e["logits"], "logits");
    backward(BertForSequenceClassification::loss(logits, e["labels"]));
    expect_parameter_gradients(model, e);
}

TEST(Bert, DropoutInTrainingModeChangesTheOutputReproducibly) {
    auto e = load_expected("seqcls");
    auto run = [&](uint64_t seed) {
        Rng init(1);
        BertForSequenceClassification model(fixture_config(), init);
        load_fixture_weights(model, "seqcls");
        model.dropout_rng = Rng(seed);
        NoGradGuard no_grad;
        return model.forward(inputs_from(e)).to_vector();
    };
    EXPECT_EQ(run(7), run(7));
    EXPECT_NE(run(7), run(8));
    EXPECT_NE(run(7), e["logits"].to_vector());
}

TEST(Bert, StateDictKeysAreHuggingFaces) {
    Rng init(1);
    BertForSequenceClassification model(fixture_config(), init);
    NamedTensors params = model.named_parameters();
    EXPECT_EQ(params.front().name, "bert.embeddings.word_embeddings.weight");
    EXPECT_EQ(params[4].name, "bert.embeddings.LayerNorm.bias");
    EXPECT_EQ(params[5].name, "bert.encoder.layer.0.attention.self.query.weight");
    EXPECT_EQ(params.back().name, "classifier.bias");
    int64_t expected_count = 0;
    for (const NamedTensor& t : load_safetensors(kDir + "seqcls.safetensors").tensors)
        expected_count += t.tensor.numel();
    EXPECT_EQ(model.parameter_count(), expected_count);
}

// HF's _init_weights, the [PAD] row of the word embeddings (padding_idx) zeroed as torch's
// nn.Embedding and HF both leave it.
TEST(Bert, HuggingFaceInitialisation) {
    BertConfig c = fixture_config();
    c.vocab_size = 2000;
    c.hidden_size = 64;
    c.pad_token_id = 7;
    Rng init(3);
    BertForSequenceClassification model(c, init);
    const Tensor words = model.bert.embeddings.word_embeddings.weight;
    for (int64_t row : {6, 7, 8}) {
        const float* w = words.f32() + row * c.hidden_size;
        const bool zero = std::all_of(w, w + c.hidden_size, [](float x) { return x == 0.0f; });
        EXPECT_EQ(zero, row == c.pad_token_id) << "word_embeddings row " << row;
    }
    for (const NamedTensor& p : model.named_parameters()) {
        std::vector<float> v = p.tensor.to_vector();
        double mean = 0, sq = 0;
        for (float x : v) mean += x, sq += (double)x * x;
        mean /= v.size();
        double stddev = std::sqrt(sq / v.size() - mean * mean);
        if (p.name.find("LayerNorm.weight") != std::string::npos) {
            EXPECT_EQ(v, std::vector<float>(v.size(), 1.0f)) << p.name;
        } else if (p.name.size() > 4 && p.name.compare(p.name.size() - 4, 4, "bias") == 0) {
            EXPECT_EQ(v, std::vector<float>(v.size(), 0.0f)) << p.name;
        } else if (v.size() > 4000) {  // enough samples for the standard deviation to be ~1% off
            EXPECT_NEAR(stddev, c.initializer_range, 0.1 * c.initializer_range) << p.name;
        }
    }
}

// Initial weights are drawn in pieces on every core, each piece's stream jumped to its first
// draw: they must be the values of one rng.normal call after another, bit for bit, however many
// pieces the thread count makes, and leave the stream where those calls leave it.
TEST(Bert, InitialWeightsAreTheStreamsNormalsInOrder) {
    const int64_t rows = 771, cols = 256;  // 197,376 values: up to four pieces of 65,536 or more
    for (int threads : {1, 3, 4}) {
        const qdq::testing::ThreadCount count(threads);
        Rng drawn(11), one_by_one(11);
        const Tensor weights = normal_tensor({rows, cols}, 0.02f, drawn);
        const std::vector<float> values = weights.to_vector();
        size_t differing = 0;
        for (float v : values) differing += std::bit_cast<uint32_t>(v) != std::bit_cast<uint32_t>(one_by_one.normal(0.0f, 0.02f));
        EXPECT_EQ(differing, 0u) << threads << " threads";
        EXPECT_EQ(drawn.state, one_by_one.state) << threads << " threads";
    }
}

TEST(Bert, BareBertModelFileLoadsIntoATaskModel) {
    NamedTensors bare;
    for (NamedTensor& t : load_safetensors(kDir + "qa.safetensors").tensors)
        if (t.name.rfind("bert.", 0) == 0) bare.push_back({t.name.substr(5), t.tensor});
    Rng init(1);
    BertForQuestionAnswering model(fixture_config(), init);
    LoadReport report = load_state_dict(model, bare, "bare");
    EXPECT_TRUE(report.unexpected.empty()) << report.summary();
    EXPECT_EQ(report.missing, (std::vector<std::string>{"qa_outputs.bias", "qa_outputs.weight"}));
}

TEST(Bert, TensorFlowLayerNormNamesAreRenamed) {
    NamedTensors renamed;
    for (NamedTensor& t : load_safetensors(kDir + "qa.safetensors").tensors) {
        std::string name = t.name;
        size_t at = name.find("LayerNorm.weight");
        if (at != std::string::npos) name.replace(at, 16, "LayerNorm.gamma");
        renamed.push_back({name, t.tensor});
    }
    Rng init(1);
    BertForQuestionAnswering model(fixture_config(), init);
    LoadReport report = load_state_dict(model, renamed, "tf-names");
    EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << report.summary();
}

TEST(Bert, ShapeMismatchNamesTheKey) {
    NamedTensors tensors = load_safetensors(kDir + "seqcls.safetensors").tensors;
    BertConfig c = fixture_config();
    c.num_labels = 2;
    Rng init(1);
    BertForSequenceClassification model(c, init);
    try {
        load_state_dict(model, tensors, "seqcls.safetensors");
        FAIL() << "a [3, 32] classifier loaded into a [2, 32] one";
    } catch (const std::runtime_error& err) {
        std::string message = err.what();
        EXPECT_NE(message.find("'classifier."), std::string::npos) << message;
        EXPECT_NE(message.find("[3"), std::string::npos) << message;
    }
}

TEST(Bert, ConfigErrorsNameTheField) {
    auto error_of = [](const nlohmann::json& j) {
        try {
            bert_config_from_json(j, "config.json");
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(error_of({{"hidden_sise", 4}}).find("hidden_sise"), std::string::npos);
    EXPECT_NE(error_of({{"hidden_size", "768"}}).find("hidden_size"), std::string::npos);
    EXPECT_NE(error_of({{"hidden_size", 30}, {"num_attention_heads", 4}}).find("multiple"), std::string::npos);
    EXPECT_NE(error_of({{"hidden_act", "relu"}}).find("hidden_act"), std::string::npos);
    EXPECT_NE(error_of({{"hidden_dropout_prob", 1.5}}).find("hidden_dropout_prob"), std::string::npos);
    EXPECT_NE(error_of({{"vocab_size", 100}, {"pad_token_id", 100}}).find("pad_token_id"), std::string::npos);
    EXPECT_EQ(error_of({{"architectures", {"BertModel"}}, {"transformers_version", "4.30"}}), "no error");
    EXPECT_EQ(bert_config_from_json({{"id2label", {{"0", "a"}, {"1", "b"}, {"2", "c"}}}}, "x").num_labels, 3);
}

TEST(Bert, RobertaTransplantGivesRobertasLogits) {
    std::ifstream in(kDir + "roberta_config.json");
    BertConfig c = bert_config_from_roberta_json(nlohmann::json::parse(in), "roberta_config.json");
    EXPECT_EQ(c.max_position_embeddings, 64);
    EXPECT_EQ(c.type_vocab_size, 1);
    NamedTensors roberta = load_safetensors(kDir + "roberta.safetensors").tensors;
    ASSERT_TRUE(is_roberta_checkpoint(roberta));
    Rng init(1);
    BertForSequenceClassification model(c, init);
    LoadReport report = load_state_dict(model, roberta_to_bert(roberta), "roberta.safetensors");
    EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << report.summary();
    model.eval();
    auto e = load_expected("roberta");
    expect_matches(model.forward(inputs_from(e)), e["logits"], "logits");
}

// The weights exactly, the [PAD] row's value among them, and the config, whose pad_token_id
// (not the fixture's 0) the reloaded model's word embeddings take as their padding_idx.
TEST(Bert, SafetensorsAndHdf5RoundTripsAreExact) {
    BertConfig c = fixture_config();
    c.pad_token_id = 5;
    Rng init(1);
    BertForMaskedLM model(c, init);
    load_fixture_weights(model, "mlm");
    std::string dir = ::testing::TempDir() + "qdq_bert_roundtrip";
    save_pretrained(model, c, dir);
    save_hdf5(model, c, dir + "/model.h5");
    for (const std::string& path : {dir, dir + "/model.safetensors", dir + "/model.h5"}) {
        BertConfig loaded_config = load_pretrained_config(path == dir + "/model.safetensors" ? dir : path);
        EXPECT_EQ(bert_config_to_json(loaded_config), bert_config_to_json(c)) << path;
        Rng other(2);
        BertForMaskedLM copy(loaded_config, other);
        EXPECT_EQ(copy.bert.embeddings.word_embeddings.padding_idx, 5) << path;
        LoadReport report = load_pretrained_weights(copy, path);
        EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << path << report.summary();
        NamedTensors a = model.state_dict(), b = copy.state_dict();
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i)
            EXPECT_EQ(a[i].tensor.to_vector(), b[i].tensor.to_vector()) << path << " " << a[i].name;
    }
}

// The reference is the full forward, itself checked against PyTorch above: gathering the
// labelled rows before the head changes only the order of float sums (GEMM blocking over M rows
// instead of B*T, the decoder gradient summed without the zero rows), so both agree to float
// rounding, 1e-5 relative.
TEST(Bert, MaskedPositionLogitsGiveTheFullLossAndGradients) {
    auto e = load_expected("mlm");
    Rng init(1);
    BertForMaskedLM model(fixture_config(), init);
    load_fixture_weights(model, "mlm");
    model.eval();
    Tensor full_loss = BertForMaskedLM::loss(model.forward(inputs_from(e)), e["labels"]);
    backward(full_loss);
    std::map<std::string, Tensor> full_grads;
    for (const NamedTensor& p : model.named_parameters()) {
        full_grads[p.name] = p.tensor.grad().clone();
        Tensor(p.tensor).zero_grad();  // a handle: drops the parameter's own gradient
    }

    MaskedLMLogits masked = model.forward_masked(inputs_from(e), e["labels"]);
    std::vector<int32_t> labelled;
    for (int64_t i = 0; i < e["labels"].numel(); ++i)
        if (e["labels"].i32()[i] != -100) labelled.push_back(e["labels"].i32()[i]);
    ASSERT_GT(labelled.size(), 1u);
    ASSERT_LT((int64_t)labelled.size(), e["labels"].numel());  // else nothing is left out
    EXPECT_EQ(masked.logits.shape(), (Shape{(int64_t)labelled.size(), fixture_config().vocab_size}));
    EXPECT_EQ(std::vector<int32_t>(masked.labels.i32(), masked.labels.i32() + masked.labels.numel()), labelled);
    Tensor loss = BertForMaskedLM::loss(masked.logits, masked.labels);
    EXPECT_NEAR(loss.item(), full_loss.item(), 1e-5f * std::fabs(full_loss.item()));
    backward(loss);
    for (const NamedTensor& p : model.named_parameters()) {
        ASSERT_TRUE(p.tensor.grad().defined()) << p.name << " received no gradient";
        expect_close(p.tensor.grad(), full_grads[p.name], 1e-5f, 1e-6f * std::max(1.0f, max_abs(full_grads[p.name])),
                     p.name.c_str());
    }
    // A short batch may have nothing masked: the step must still run, with loss 0.
    MaskedLMLogits none = model.forward_masked(inputs_from(e), from_ints(e["labels"].shape(),
                                                std::vector<int32_t>(e["labels"].numel(), -100)));
    EXPECT_EQ(none.logits.shape(), (Shape{0, fixture_config().vocab_size}));
    Tensor zero = BertForMaskedLM::loss(none.logits, none.labels);
    EXPECT_EQ(zero.item(), 0.0f);
    backward(zero);
}
