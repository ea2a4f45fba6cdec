// Whole training steps against PyTorch (tests/fixtures/make_training_step.py, Hugging Face's
// BERT and Trainer in plain PyTorch): from the same weights on the same padded batch, three
// optimizer steps of each head through train() itself, dropout off. The first step's gradient
// of every parameter, each step's loss, gradient norm and learning rate, and every parameter
// after the last step must agree. This covers what one head's test of the forward pass cannot:
// the [PAD] row (padding_idx), weight-decay groups, clipping, AdamW, the schedule's warmup, and
// a masked-LM decoder tied to the word embeddings. The TrainingStepOnDevice tests take the same
// steps on the device, where there is one (the emulated device in the suite's second build).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <type_traits>

#include "autograd/matmul_precision.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "io/safetensors.h"
#include "nn/heads.h"
#include "nn/state_dict.h"
#include "optim/clip_grad.h"
#include "tests/support/gradcheck.h"
#include "tests/support/metrics_records.h"
#include "tests/support/temp_dir.h"
#include "trainers/run_device.h"
#include "trainers/trainer.h"

using namespace qdq;
using namespace qdq::nn;
using namespace qdq::testing;

namespace {

const std::string kDir = std::string(QDQ_FIXTURE_DIR) + "/bert_tiny/";
constexpr int64_t kSteps = 3;

// Gradients: as tests/test_bert.cpp's, float32 here against a float64 reference, summed in
// other orders. Weights after three steps: Adam divides each gradient by its own size, so an
// element whose gradient is zero but for rounding (key biases, the QA head's bias) moves by
// lr · g / adam_epsilon, with g float32 rounding here (~1e-8) and far less in the reference:
// up to 1e-5 at lr 1e-2 and eps 1e-5 (measured: 4e-6 on AVX2); 3e-5 covers it, and is a
// three-hundredth of what one step moves an element whose gradient is wrong (lr).
constexpr float kGradRtol = 1e-4f;
constexpr float kWeightAtol = 3e-5f;

using Tensors = std::map<std::string, Tensor>;

Tensors load_tensors(const std::string& file) {
    Tensors out;
    for (NamedTensor& t : load_safetensors(kDir + file).tensors) out[t.name] = t.tensor;
    return out;
}

float max_abs(const Tensor& t) {
    float m = 0;
    for (float v : t.to_vector()) m = std::max(m, std::fabs(v));
    return m;
}

BertInputs fixture_inputs(Tensors& e) { return {e["input_ids"], e["token_type_ids"], e["attention_mask"]}; }

// Each head's loss as its task's train_loss computes it (trainers/*_task.cpp).
Tensor head_loss(BertForSequenceClassification& m, Tensors& e) {
    return BertForSequenceClassification::loss(m.forward(fixture_inputs(e)), e["labels"]);
}

Tensor head_loss(BertForQuestionAnswering& m, Tensors& e) {
    const Tensor& positions = e["labels"];  // [2, B]: the start row, then the end row
    const int32_t B = (int32_t)positions.size(1);
    const int32_t* p = positions.i32();
    return BertForQuestionAnswering::loss(m.forward(fixture_inputs(e)), from_ints({B}, {p, p + B}),
                                          from_ints({B}, {p + B, p + 2 * B}));
}

Tensor head_loss(BertForMaskedLM& m, Tensors& e) {
    MaskedLMLogits out = m.forward_masked(fixture_inputs(e), e["labels"]);
    return BertForMaskedLM::loss(out.logits, out.labels);
}

// The fixture's one batch as a task: every training batch is the whole of it, and evaluation
// is its loss. What train() does not call throws.
template <typename Model>
class FixtureTask final : public Task {
public:
    FixtureTask(const BertConfig& config, Tensors& batch, const RunConfig& run)
        : config_(config), model_(config, init_rng_), batch_(batch) {
        const std::string head = std::is_same_v<Model, BertForQuestionAnswering> ? "qa"
                                 : std::is_same_v<Model, BertForMaskedLM>        ? "mlm"
                                                                                 : "seqcls";
        LoadReport report = load_state_dict(model_, load_safetensors(kDir + "step_" + head + ".safetensors").tensors, head);
        EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << report.summary();
        place_on_run_device(model_, run);
    }

    Model& head() { return model_; }
    Module& model() override { return model_; }
    BertModel& encoder() override { return model_.bert; }
    const BertConfig& model_config() const override { return config_; }
    Rng& dropout_rng() override { return model_.dropout_rng; }
    int64_t train_size() const override { return rows(); }
    std::vector<int32_t> train_lengths() const override { return std::vector<int32_t>((size_t)rows(), 1); }
    Tensor train_loss(const std::vector<int64_t>& indices, Rng&) override {
        EXPECT_EQ((int64_t)indices.size(), rows()) << "a training batch is the whole fixture batch";
        return head_loss(model_, batch_);
    }
    Metrics evaluate(int64_t) override {
        NoGradGuard no_grad;
        const bool was_training = model_.is_training();
        model_.eval();
        const double loss = head_loss(model_, batch_).item();
        if (was_training) model_.train();
        return {.task = kKind, .scores = {{"loss", loss}}};
    }
    std::string main_metric() const override { return "loss"; }
    bool scores_outputs() const override { return false; }
    std::vector<BertInputs> eval_inputs(int64_t) override { throw std::logic_error("not used"); }
    Metrics score(const std::vector<NamedOutputs>&, int64_t) override { throw std::logic_error("not used"); }
    std::vector<NamedOutputs> eval_outputs(const std::vector<BertInputs>&) override { throw std::logic_error("not used"); }
    void select_eval_set(EvalSplit) override { throw std::logic_error("not used"); }
    nlohmann::json predict(const std::string&, int64_t) override { throw std::logic_error("not used"); }

private:
    static constexpr TaskKind kKind = std::is_same_v<Model, BertForQuestionAnswering> ? TaskKind::squad
                                      : std::is_same_v<Model, BertForMaskedLM>        ? TaskKind::mlm
                                                                                      : TaskKind::classification;

    int64_t rows() const { return batch_.at("input_ids").size(0); }

    BertConfig config_;
    Rng init_rng_{1};
    Model model_;
    Tensors& batch_;
};

// The fixture's hyperparameters (make_training_step.py), as a config's training section. The
// data section is only checked (the task is the fixture's batch): its vocabulary must exist.
RunConfig step_config(const BertConfig& model, const TempDir& dir, bool use_cpu) {
    dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n");
    nlohmann::json model_json = bert_config_to_json(model);
    nlohmann::json raw = {
        {"model", {{"config", model_json}}},
        {"data", {{"dataset", "sst2"}, {"data_dir", dir.path().string()}, {"vocab", "vocab.txt"}}},
        {"training",
         {{"output_dir", (dir.path() / "run").string()}, {"use_cpu", use_cpu}, {"per_device_train_batch_size", 4},
          {"max_steps", kSteps}, {"learning_rate", 1e-2}, {"weight_decay", 0.01}, {"warmup_steps", 1},
          {"adam_epsilon", 1e-5}, {"max_grad_norm", 1.0}, {"logging_steps", 1}}}};
    return parse_run_config(raw, "training_step.json", dir.path().string());
}

void expect_first_step_gradients(Module& model, Tensors& e) {
    for (const NamedTensor& p : model.named_parameters()) {
        ASSERT_TRUE(p.tensor.grad().defined()) << p.name << " received no gradient";
        const Tensor& want = e.at("grad." + p.name);
        expect_close(p.tensor.grad().to(Device::CPU), want, kGradRtol, 1e-5f * std::max(1.0f, max_abs(want)),
                     ("grad " + p.name).c_str());
    }
}

// Runs the steps and checks them against the fixture; returns the weights they end with.
template <typename Model>
Tensors expect_steps_match_pytorch(const std::string& head, bool use_cpu) {
    Tensors e = load_tensors("step_" + head + ".expected.safetensors");
    BertConfig model_config = load_bert_config(kDir + "config.json");
    model_config.hidden_dropout_prob = 0;
    model_config.attention_probs_dropout_prob = 0;
    TempDir dir;
    const RunConfig config = step_config(model_config, dir, use_cpu);
    FixtureTask<Model> task(model_config, e, config);

    // The first step's gradients, as optimizer_step will compute them, then cleared.
    task.model().train();
    backward(task.train_loss({0, 1, 2, 3}, task.dropout_rng()));
    expect_first_step_gradients(task.model(), e);
    for (NamedTensor p : task.model().named_parameters()) p.tensor.zero_grad();

    const TrainOutcome outcome = train(config, task);
    EXPECT_EQ(outcome.status, TrainStatus::finished) << outcome.message;
    std::vector<nlohmann::json> records;
    for (const nlohmann::json& r : metrics_records(dir.path() / "run"))
        if (r.contains("grad_norm")) records.push_back(r);
    EXPECT_EQ((int64_t)records.size(), kSteps);
    if ((int64_t)records.size() != kSteps) return {};
    for (int64_t s = 0; s < kSteps; ++s) {
        const nlohmann::json& r = records[(size_t)s];
        EXPECT_NEAR(r["loss"].get<double>(), e["loss"].f32()[s], 1e-5 * std::fabs(e["loss"].f32()[s])) << "step " << s + 1;
        EXPECT_NEAR(r["grad_norm"].get<double>(), e["grad_norm"].f32()[s], 1e-4 * e["grad_norm"].f32()[s]) << "step " << s + 1;
        EXPECT_NEAR(r["learning_rate"].get<double>(), e["learning_rate"].f32()[s], 1e-9) << "step " << s + 1;
    }
    Tensors final_weights;
    for (const NamedTensor& p : task.model().named_parameters()) {
        final_weights[p.name] = p.tensor.to(Device::CPU);
        expect_close(final_weights[p.name], e.at("final." + p.name), 0.0f, kWeightAtol, ("after the steps: " + p.name).c_str());
    }
    return final_weights;
}

bool has_device() { return cuda::device_count() > 0; }

}  // namespace

TEST(TrainingStep, QuestionAnsweringMatchesPyTorch) { expect_steps_match_pytorch<BertForQuestionAnswering>("qa", true); }

TEST(TrainingStep, SequenceClassificationMatchesPyTorch) {
    expect_steps_match_pytorch<BertForSequenceClassification>("seqcls", true);
}

TEST(TrainingStep, MaskedLMMatchesPyTorch) { expect_steps_match_pytorch<BertForMaskedLM>("mlm", true); }

// The [PAD] row in the question-answering head, whose start and end logits cover padded
// positions: the lookup gives it no gradient, so after the steps it has moved by weight decay
// alone, p · Π(1 − lr · wd), although the batch is a third padding.
TEST(TrainingStep, PaddingRowMovesByWeightDecayAlone) {
    const std::string name = "bert.embeddings.word_embeddings.weight";
    Tensors e = load_tensors("step_qa.expected.safetensors");
    const Tensor start = load_tensors("step_qa.safetensors").at(name);
    double decay = 1;
    for (int64_t s = 0; s < kSteps; ++s) decay *= 1.0 - (double)e["learning_rate"].f32()[s] * 0.01;
    Tensors trained = expect_steps_match_pytorch<BertForQuestionAnswering>("qa", true);
    ASSERT_TRUE(trained.count(name));
    const int64_t pad = load_bert_config(kDir + "config.json").pad_token_id, C = start.size(1);
    for (int64_t c = 0; c < C; ++c) {
        const float initial = start.f32()[pad * C + c];
        EXPECT_NEAR(e.at("final." + name).f32()[pad * C + c], initial * decay, 1e-7) << "PyTorch's [PAD] row, column " << c;
        EXPECT_NEAR(trained[name].f32()[pad * C + c], initial * decay, 1e-7) << "the [PAD] row, column " << c;
    }
}

TEST(TrainingStepOnDevice, QuestionAnsweringMatchesPyTorch) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    expect_steps_match_pytorch<BertForQuestionAnswering>("qa", false);
}

TEST(TrainingStepOnDevice, SequenceClassificationMatchesPyTorch) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    expect_steps_match_pytorch<BertForSequenceClassification>("seqcls", false);
}

TEST(TrainingStepOnDevice, MaskedLMMatchesPyTorch) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    expect_steps_match_pytorch<BertForMaskedLM>("mlm", false);
}

// What a device step waits for, counted on its second step (the first leaves the softmax's
// mask offsets on the device): the backward reads nothing back, and the clipping reads every
// gradient's sum of squares in one copy, so neither grows with the model's depth. The same
// with bf16 products, whose operands are rounded on the device. And what it allocates: the
// second step's forward, backward and clipping find every block in what the first one freed
// (cudaMalloc costs tens of microseconds, and cudaFree waits for the whole device).
template <typename Model>
void expect_backward_and_clipping_wait_once(const std::string& head, MatmulPrecision precision) {
    Tensors e = load_tensors("step_" + head + ".expected.safetensors");
    const BertConfig model_config = load_bert_config(kDir + "config.json");
    TempDir dir;
    FixtureTask<Model> task(model_config, e, step_config(model_config, dir, false));
    task.model().train();
    std::vector<Tensor> params;
    for (const NamedTensor& p : task.model().named_parameters()) params.push_back(p.tensor);
    const MatmulPrecisionGuard products(precision);
    const std::string what = head + (precision == MatmulPrecision::BF16 ? " in bf16" : "");
    for (int step = 1; step <= 2; ++step) {
        const int64_t blocks = cuda::blocks_made();
        const Tensor loss = task.train_loss({0, 1, 2, 3}, task.dropout_rng());
        const int64_t before = cuda::host_waits();
        backward(loss);
        const int64_t after_backward = cuda::host_waits();
        clip_grad_norm(params, 1.0);
        if (step == 2) {
            EXPECT_EQ(after_backward - before, 0) << what << ": the backward's waits";
            EXPECT_EQ(cuda::host_waits() - after_backward, 1) << what << ": the clipping's waits";
            EXPECT_EQ(cuda::blocks_made() - blocks, 0) << what << ": device blocks made";
        }
        for (Tensor& p : params) p.zero_grad();
    }
}

TEST(TrainingStepOnDevice, BackwardAndClippingWaitForTheDeviceOnceAndAllocateNothingNew) {
    if (!has_device()) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    for (MatmulPrecision precision : {MatmulPrecision::F32, MatmulPrecision::BF16}) {
        expect_backward_and_clipping_wait_once<BertForSequenceClassification>("seqcls", precision);
        expect_backward_and_clipping_wait_once<BertForQuestionAnswering>("qa", precision);
        expect_backward_and_clipping_wait_once<BertForMaskedLM>("mlm", precision);
    }
}
