// Knowledge distillation (trainers/distillation.h):
//  - softmax_kl_div and the whole distillation loss (classification; SQuAD's start and end)
//    against PyTorch (fixtures/distillation.json, written by fixtures/make_distillation.py:
//    F.kl_div(log_softmax(s / T), softmax(t / T), reduction='batchmean') in float64 from the
//    float32 inputs, rounded once) at T = 1, 2, 3 and 4; softmax_kl_div's gradient against
//    central finite differences. The reference being exact, the tolerance bounds our float32
//    error alone: rtol 1e-5 is a few roundings of log-softmax values up to |16| (ulp 2e-6) summed
//    over a row; atol 1e-6 covers gradients q − p that cancel to near zero.
//  - α = 1: the loss and every gradient equal the task loss's bit for bit, for the loss alone,
//    for one batch of each task, and for a whole training run.
//  - The teacher runs on the student's batch: a student that starts as its teacher (no
//    dropout) has a KL term of exactly 0, and a different teacher's is not 0.
//  - A teacher that is not a model of the task is refused, naming distillation.teacher.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "io/hdf5_weights.h"
#include "nn/heads.h"
#include "nn/pretrained.h"
#include "tests/support/data.h"
#include "tests/support/expect_error.h"
#include "tests/support/fixture.h"
#include "tests/support/gradcheck.h"
#include "tests/support/metrics_records.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/distillation.h"
#include "trainers/trainer.h"

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

namespace {

const Fixture& distillation_fixture() {
    static const Fixture fixture("distillation.json");
    return fixture;
}

DistillationSettings settings_of(const nlohmann::json& params) {
    DistillationSettings d;
    d.temperature = params.at("temperature").get<double>();
    d.alpha = params.value("alpha", 0.5);
    return d;
}

// Each case's loss from its inputs (see make_distillation.py for their order).
using LossFn = std::function<Tensor(const std::vector<Tensor>&, const nlohmann::json& params)>;

Tensor kl_case(const std::vector<Tensor>& x, const nlohmann::json& p) {
    return softmax_kl_div(x[0], x[1], p.at("temperature").get<float>());
}

Tensor classification_case(const std::vector<Tensor>& x, const nlohmann::json& p) {
    return distillation_loss(settings_of(p), cross_entropy(x[0], x[2]), {x[0]}, {x[1]});
}

Tensor squad_case(const std::vector<Tensor>& x, const nlohmann::json& p) {
    const Tensor task = nn::BertForQuestionAnswering::loss({x[0], x[1]}, x[4], x[5]);
    return distillation_loss(settings_of(p), task, {x[0], x[1]}, {x[2], x[3]});
}

struct LossCase {
    const char* name;
    LossFn f;
};

void PrintTo(const LossCase& c, std::ostream* os) { *os << c.name; }

class DistillationCase : public ::testing::TestWithParam<LossCase> {};

const LossCase kCases[] = {{"kl_div_t1", kl_case},
                           {"kl_div_t4", kl_case},
                           {"kl_div_span_t2", kl_case},
                           {"kl_div_peaked_teacher_t1", kl_case},
                           {"distillation_classification", classification_case},
                           {"distillation_squad", squad_case}};

TrainOutcome train_config(const nlohmann::json& raw) {
    RunConfig config = parse_run_config(raw, "test.json", ".");
    std::unique_ptr<Task> task = make_task(config, {});
    return train(config, *task);
}

bool same_bits(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), (size_t)a.numel() * 4) == 0;
}

// One training batch through the task: its loss and every parameter's gradient.
struct BatchGradients {
    float loss;
    NamedTensors grads;
};

BatchGradients batch_gradients(Task& task, const std::vector<int64_t>& indices) {
    nn::Module& model = task.model();
    model.train();
    Rng data_rng(0);
    Tensor loss = task.train_loss(indices, data_rng);
    BatchGradients out{loss.item(), {}};
    backward(loss);
    for (NamedTensor p : model.named_parameters()) {
        out.grads.push_back({p.name, p.tensor.grad().clone()});
        p.tensor.zero_grad();
    }
    return out;
}

void expect_same_gradients(const BatchGradients& a, const BatchGradients& b) {
    EXPECT_EQ(std::memcmp(&a.loss, &b.loss, 4), 0) << a.loss << " vs " << b.loss;
    ASSERT_EQ(a.grads.size(), b.grads.size());
    for (size_t i = 0; i < a.grads.size(); ++i) EXPECT_TRUE(same_bits(a.grads[i].tensor, b.grads[i].tensor)) << a.grads[i].name;
}

// The first `n` training features.
std::vector<int64_t> first(int64_t n) {
    std::vector<int64_t> out((size_t)n);
    std::iota(out.begin(), out.end(), 0);
    return out;
}

// A task's model, as initialised from `seed`, saved as model.h5 would be.
std::string save_initial_model(const TempDir& dir, nlohmann::json raw, uint64_t seed, const std::string& name) {
    raw["training"]["seed"] = seed;
    raw["model"].erase("init");
    raw.erase("distillation");
    std::unique_ptr<Task> task = make_task(parse_run_config(raw, "test.json", "."), {.train = false, .eval = false});
    const std::string path = (dir.path() / name).string();
    nn::save_hdf5(task->model(), task->model_config(), path);
    return path;
}

// With model.init set to the teacher and no dropout, the student starts as its teacher: at α = 0
// the loss is the KL term alone, exactly 0, and α = 0.5 halves the task loss exactly. A teacher
// that differs (another seed) gives a KL term above 0 (small: both models' logits are near 0 at
// initialisation).
void expect_teacher_sees_the_students_batch(const TempDir& dir, nlohmann::json raw, int64_t batch) {
    raw["model"]["config"]["hidden_dropout_prob"] = 0.0;
    raw["model"]["config"]["attention_probs_dropout_prob"] = 0.0;
    const std::string teacher = save_initial_model(dir, raw, 11, "teacher.h5");
    raw["model"]["init"] = teacher;
    const float plain = batch_gradients(*make_task(parse_run_config(raw, "test.json", "."), {.eval = false}), first(batch)).loss;
    ASSERT_GT(plain, 0.0f);
    raw["distillation"] = {{"teacher", teacher}, {"temperature", 2.0}, {"alpha", 0.0}};
    EXPECT_EQ(batch_gradients(*make_task(parse_run_config(raw, "test.json", "."), {.eval = false}), first(batch)).loss, 0.0f);
    raw["distillation"]["alpha"] = 0.5;
    EXPECT_EQ(batch_gradients(*make_task(parse_run_config(raw, "test.json", "."), {.eval = false}), first(batch)).loss,
              0.5f * plain);
    raw["distillation"] = {{"teacher", save_initial_model(dir, raw, 12, "other.h5")}, {"temperature", 2.0}, {"alpha", 0.0}};
    EXPECT_GT(batch_gradients(*make_task(parse_run_config(raw, "test.json", "."), {.eval = false}), first(batch)).loss, 0.0f);
}

// α = 1: one batch's loss and gradients equal those of the task without distillation, bit for bit.
void expect_alpha_one_is_the_task_loss(const TempDir& dir, nlohmann::json raw, int64_t batch) {
    const BatchGradients plain = batch_gradients(*make_task(parse_run_config(raw, "test.json", "."), {.eval = false}), first(batch));
    raw["distillation"] = {{"teacher", save_initial_model(dir, raw, 11, "teacher.h5")}, {"temperature", 3.0}, {"alpha", 1.0}};
    expect_same_gradients(batch_gradients(*make_task(parse_run_config(raw, "test.json", "."), {.eval = false}), first(batch)),
                          plain);
}

}  // namespace

TEST_P(DistillationCase, LossAndGradientMatchPyTorch) {
    const nlohmann::json& c = distillation_fixture().at(GetParam().name);
    std::vector<Tensor> inputs = fixture_inputs(c);
    for (size_t k = 0; k < inputs.size(); ++k)
        if (c.contains(indexed_name("grad_x", k))) inputs[k].set_requires_grad();
    Tensor loss = GetParam().f(inputs, c.at("params"));
    expect_close(loss, fixture_tensor(c, "out"), 1e-5f, 1e-6f, "out");
    backward(loss, fixture_tensor(c, "w"));
    for (size_t k = 0; k < inputs.size(); ++k) {
        const std::string name = indexed_name("grad_x", k);
        if (!c.contains(name)) {
            EXPECT_FALSE(inputs[k].grad().defined()) << "the teacher's x" << k << " took a gradient";
            continue;
        }
        ASSERT_TRUE(inputs[k].grad().defined()) << name;
        expect_close(inputs[k].grad(), fixture_tensor(c, name), 1e-5f, 1e-6f, name.c_str());
    }
}

// Only the student's logits vary; the teacher's and the labels stay as the fixture has them.
TEST_P(DistillationCase, GradientMatchesFiniteDifferences) {
    const nlohmann::json& c = distillation_fixture().at(GetParam().name);
    expect_case_gradients_match_finite_differences(
        c, [&](const std::vector<Tensor>& all) { return GetParam().f(all, c.at("params")); });
}

INSTANTIATE_TEST_SUITE_P(Fixture, DistillationCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<LossCase>& info) { return std::string(info.param.name); });

TEST(Distillation, AlphaOneIsTheTaskLossBitForBit) {
    const Tensor teacher = random_tensor({5, 4}, 2, -3, 3);
    const Tensor labels = from_ints({5}, {0, 3, 1, 1, 2});
    DistillationSettings d;
    d.alpha = 1;
    d.temperature = 4;
    Tensor student = random_tensor({5, 4}, 1, -3, 3);
    student.set_requires_grad();
    Tensor loss = distillation_loss(d, cross_entropy(student, labels), {student}, {teacher});
    backward(loss);
    Tensor alone = student.clone();
    alone.set_requires_grad();
    Tensor task = cross_entropy(alone, labels);
    backward(task);
    EXPECT_TRUE(same_bits(loss, task)) << loss.item() << " vs " << task.item();
    EXPECT_TRUE(same_bits(student.grad(), alone.grad()));
}

TEST(Distillation, BadLogitsAreRefused) {
    const Tensor a = random_tensor({2, 3}, 1);
    expect_error([&] { softmax_kl_div(a, random_tensor({2, 4}, 2), 1.0f); }, {"softmax_kl_div", "teacher", "[2, 3]"});
    expect_error([&] { softmax_kl_div(random_tensor({2, 2, 3}, 3), random_tensor({2, 2, 3}, 4), 1.0f); },
                 {"softmax_kl_div", "[N, C]"});
    expect_error([&] { softmax_kl_div(a, a, 0.0f); }, {"softmax_kl_div", "temperature"});
    DistillationSettings d;
    EXPECT_THROW(distillation_loss(d, cross_entropy(a, from_ints({2}, {0, 1})), {a, a}, {a}), std::invalid_argument);
}

TEST(Distillation, ClassificationTeacherSeesTheStudentsBatch) {
    TempDir dir;
    write_task_files(dir);
    expect_teacher_sees_the_students_batch(dir, tiny_config(dir, "run"), 8);
}

TEST(Distillation, ClassificationAlphaOneIsTheTaskLoss) {
    TempDir dir;
    write_task_files(dir);
    expect_alpha_one_is_the_task_loss(dir, tiny_config(dir, "run"), 8);
}

// A whole run, with dropout: α = 1 logs and saves what the run without a teacher does.
TEST(Distillation, AlphaOneRunEqualsTheRunWithoutATeacher) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "plain");
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    raw["training"]["output_dir"] = (dir.path() / "distilled").string();
    raw["distillation"] = {{"teacher", (dir.path() / "plain" / "model.h5").string()}, {"temperature", 2.0}, {"alpha", 1.0}};
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    EXPECT_EQ(metrics_records(dir.path() / "plain"), metrics_records(dir.path() / "distilled"));
    Hdf5Weights x = load_hdf5_weights((dir.path() / "plain" / "model.h5").string());
    Hdf5Weights y = load_hdf5_weights((dir.path() / "distilled" / "model.h5").string());
    ASSERT_EQ(x.tensors.size(), y.tensors.size());
    for (size_t i = 0; i < x.tensors.size(); ++i)
        EXPECT_TRUE(same_bits(x.tensors[i].tensor, y.tensors[i].tensor)) << x.tensors[i].name;
}

TEST(Distillation, TeacherOfAnotherModelIsRefused) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    nlohmann::json other_vocab = raw;
    other_vocab["model"]["config"]["vocab_size"] = 14;
    raw["distillation"] = {{"teacher", save_initial_model(dir, other_vocab, 1, "vocab14.h5")}};
    expect_error([&] { make_task(parse_run_config(raw, "test.json", "."), {}); },
                 {"'distillation.teacher'", "vocab14.h5", "vocab_size 14 and 13"});

    // A question-answering model has no classifier (nor pooler) for a classification teacher.
    Rng rng(1);
    const nn::BertConfig config = nn::bert_config_from_json(raw["model"]["config"], "test.json");
    const std::string squad = (dir.path() / "squad.h5").string();
    nn::save_hdf5(nn::BertForQuestionAnswering(config, rng), config, squad);
    raw["distillation"]["teacher"] = squad;
    expect_error([&] { make_task(parse_run_config(raw, "test.json", "."), {}); },
                 {"'distillation.teacher'", "squad.h5", "is not a model of this task", "classifier.weight"});
    // Evaluation alone needs no teacher.
    EXPECT_NO_THROW(make_task(parse_run_config(raw, "test.json", "."), {.train = false}));
}

// SQuAD on a few dev questions with a 2-layer BERT and the real vocabulary (its ids index the
// embeddings): both logits reach the teacher's KL terms.
class SquadDistillation : public ::testing::Test {
protected:
    void SetUp() override {
        QDQ_REQUIRE_DATA_FILE("squad/dev-v1.1.json.gz");
        QDQ_REQUIRE_DATA_FILE("vocab/bert-base-uncased-vocab.txt");
        raw_ = {{"model",
                 {{"config",
                   {{"hidden_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 64},
                    {"max_position_embeddings", 128}}}}},
                {"data",
                 {{"task", "squad"}, {"train_files", {"squad/dev-v1.1.json.gz"}}, {"max_train_examples", 6},
                  {"max_seq_length", 96}, {"doc_stride", 48}}},
                {"training", {{"seed", 3u}}}};
    }
    TempDir dir_;
    nlohmann::json raw_;
};

TEST_F(SquadDistillation, TeacherSeesTheStudentsBatch) { expect_teacher_sees_the_students_batch(dir_, raw_, 6); }

TEST_F(SquadDistillation, AlphaOneIsTheTaskLoss) { expect_alpha_one_is_the_task_loss(dir_, raw_, 6); }
