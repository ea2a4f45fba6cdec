// The SQuAD task (trainers/squad_task.cpp) on SQuAD v1.1 dev questions with a tiny random BERT:
// the article split, EM/F1 against the official v1.1 evaluation re-stated in Python
// (tests/fixtures/make_squad_metric_reference.py, run by Debian's /usr/bin/python3), that a few
// questions can be learnt by heart, that padding positions never take an answer's place, and
// that bad input is reported with its file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <unordered_map>

#include <unistd.h>

#include "autograd/tape.h"
#include "data/data_dir.h"
#include "data/metrics.h"
#include "data/squad_reader.h"
#include "optim/adamw.h"
#include "optim/param_groups.h"
#include "tests/support/data.h"
#include "trainers/run_config.h"
#include "trainers/task.h"

using namespace qdq;
namespace fs = std::filesystem;

namespace {

const char* kDev = "squad/dev-v1.1.json.gz";
const char* kVocab = "vocab/bert-base-uncased-vocab.txt";  // the config's default

// A fresh directory of this process, removed with it: ctest -j runs the tests of a binary as
// parallel processes, and another build directory may run the same test at the same time.
struct ScratchDir {
    std::string path;
    explicit ScratchDir(const std::string& name)
        : path(::testing::TempDir() + name + "_" + std::to_string(getpid())) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
};

const std::vector<SquadExample>& dev_questions() {
    static const std::vector<SquadExample> questions = read_squad(data_path(kDev)).examples;
    return questions;
}

// The questions as a SQuAD v1.1 file, in their order; consecutive questions on one context
// share a paragraph, and consecutive paragraphs of one title an article.
void write_squad(const std::string& path, const std::vector<SquadExample>& questions) {
    nlohmann::json data = nlohmann::json::array();
    const SquadExample* previous = nullptr;
    for (const SquadExample& q : questions) {
        nlohmann::json answers = nlohmann::json::array();
        for (const SquadAnswer& a : q.answers) answers.push_back({{"text", a.text}, {"answer_start", a.answer_start}});
        const nlohmann::json qa = {{"id", q.id}, {"question", q.question}, {"answers", answers}};
        const bool new_article = !previous || previous->title != q.title;
        if (new_article) data.push_back({{"title", q.title}, {"paragraphs", nlohmann::json::array()}});
        nlohmann::json& paragraphs = data.back()["paragraphs"];
        if (new_article || previous->context != q.context)
            paragraphs.push_back({{"context", q.context}, {"qas", nlohmann::json::array()}});
        paragraphs.back()["qas"].push_back(qa);
        previous = &q;
    }
    std::ofstream(path) << nlohmann::json{{"version", "1.1"}, {"data", data}}.dump();
}

// A 2-layer BERT with the real vocabulary (the tokenizer's ids index its embeddings) and no
// dropout, so a few dozen steps can learn a handful of answers.
RunConfig squad_config(const nlohmann::json& data) {
    nlohmann::json raw = {
        {"model",
         {{"config",
           {{"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 128},
            {"max_position_embeddings", 256}, {"hidden_dropout_prob", 0.0}, {"attention_probs_dropout_prob", 0.0}}}}},
        {"data", {{"task", "squad"}, {"max_seq_length", 192}, {"doc_stride", 64}}},
        {"training", {{"seed", 3u}}}};
    raw["data"].update(data);
    return parse_run_config(raw, "squad_run.json", ".");
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "no error";
}

// Full-batch AdamW over every training window at a constant rate: the trainer's update
// without its schedule, clipping and loader.
void train_steps(Task& task, int steps, double lr) {
    nn::Module& model = task.model();
    model.train();
    AdamW opt = make_adamw(weight_decay_groups(model.named_parameters(), 0.01));
    std::vector<int64_t> all((size_t)task.train_size());
    std::iota(all.begin(), all.end(), 0);
    Rng data_rng(0);
    for (int s = 0; s < steps; ++s) {
        backward(task.train_loss(all, data_rng));
        adamw_step(opt, lr);
        for (NamedTensor p : model.named_parameters()) p.tensor.zero_grad();
    }
}

// The first `per_article` questions of each of the first `articles` articles of the dev set.
std::vector<SquadExample> first_questions(int articles, int per_article) {
    std::vector<SquadExample> out;
    std::vector<std::string> titles;
    int taken = 0;
    for (const SquadExample& q : dev_questions()) {
        if (titles.empty() || titles.back() != q.title) {
            if ((int)titles.size() == articles) break;
            titles.push_back(q.title);
            taken = 0;
        }
        if (taken++ < per_article) out.push_back(q);
    }
    return out;
}

// evaluate-v1.1.py's evaluate() (as re-stated in the fixture script) over a SQuAD file and a
// predictions file: {"exact_match", "f1", "total"}.
nlohmann::json official_scores(const std::string& dir, const std::string& dataset, const std::string& predictions) {
    const std::string script = dir + "/score.py", out = dir + "/scores.json";
    std::ofstream(script) << "import json, sys\n"
                             "sys.path.insert(0, sys.argv[1])\n"
                             "import make_squad_metric_reference as ref\n"
                             "data = json.load(open(sys.argv[2], encoding='utf-8'))['data']\n"
                             "questions = [qa for article in data for p in article['paragraphs'] for qa in p['qas']]\n"
                             "predictions = json.load(open(sys.argv[3], encoding='utf-8'))\n"
                             "print(json.dumps(ref.evaluate(questions, predictions)))\n";
    const auto quoted = [](const std::string& path) { return "'" + path + "'"; };
    const std::string command = "/usr/bin/python3 " + quoted(script) + " " + quoted(QDQ_FIXTURE_DIR) + " " +
                                quoted(dataset) + " " + quoted(predictions) + " > " + quoted(out);
    if (std::system(command.c_str()) != 0) return nullptr;
    return nlohmann::json::parse(std::ifstream(out));
}

std::set<std::string> titles_of(const std::vector<SquadExample>& part) {
    std::set<std::string> out;
    for (const SquadExample& q : part) out.insert(q.title);
    return out;
}

}  // namespace

// The task's split must be split_squad_by_article's, with the limits applied after it: a task
// given the two parts as separate files, with the same limits, sees the same windows, losses
// and scores. (Limiting first, then splitting, gives other questions.)
TEST(SquadTask, SplitsTrainFilesByArticleBeforeLimiting) {
    QDQ_REQUIRE_DATA_FILE(kDev);
    QDQ_REQUIRE_DATA_FILE(kVocab);
    const ScratchDir scratch("qdq_squad_split");
    const std::string& dir = scratch.path;
    const SquadSplit split = split_squad_by_article(dev_questions(), 0.25, 7);
    const std::set<std::string> train_titles = titles_of(split.train), eval_titles = titles_of(split.eval);
    EXPECT_EQ(eval_titles.size(), 12u);  // round(0.25 x 48 articles)
    EXPECT_EQ(train_titles.size(), 36u);
    for (const std::string& title : eval_titles) EXPECT_EQ(train_titles.count(title), 0u) << title;
    EXPECT_EQ(split.train.size() + split.eval.size(), 10570u);

    const nlohmann::json limits = {{"max_train_examples", 24}, {"max_eval_examples", 40}};
    nlohmann::json settings = {{"train_files", {kDev}}, {"squad_eval_fraction", 0.25}, {"squad_split_seed", 7u}};
    settings.update(limits);
    std::unique_ptr<Task> task = make_task(squad_config(settings), {});
    write_squad(dir + "/train.json", split.train);
    write_squad(dir + "/eval.json", split.eval);
    nlohmann::json parts = {{"train_files", {dir + "/train.json"}}, {"eval_files", {dir + "/eval.json"}}};
    parts.update(limits);
    std::unique_ptr<Task> reference = make_task(squad_config(parts), {});

    ASSERT_EQ(task->train_size(), reference->train_size());
    EXPECT_GE(task->train_size(), 24);
    EXPECT_EQ(task->train_lengths(), reference->train_lengths());
    std::vector<int64_t> all((size_t)task->train_size());
    std::iota(all.begin(), all.end(), 0);
    Rng rng(0);
    {
        NoGradGuard no_grad;
        EXPECT_EQ(task->train_loss(all, rng).item(), reference->train_loss(all, rng).item());
    }
    const Metrics scores = task->evaluate(8);
    EXPECT_EQ(scores.task, TaskKind::squad);
    EXPECT_EQ(scores.counts.at("eval_examples"), 40);
    EXPECT_GE(scores.counts.at("eval_windows"), 40);
    EXPECT_GT(scores.scores.at("f1"), 0.0);  // else equal scores would say little
    EXPECT_EQ(scores, reference->evaluate(8));
}

// A validation split sets aside articles of the training part as split_squad_by_article does,
// after the evaluation split, and halves them by article: a task given the parts as files sees
// the same training windows, and scores the same on validation, its halves and test.
TEST(SquadTask, ValidationSplitHoldsOutArticlesOfTheTrainingPart) {
    QDQ_REQUIRE_DATA_FILE(kDev);
    QDQ_REQUIRE_DATA_FILE(kVocab);
    const ScratchDir scratch("qdq_squad_validation");
    const std::string& dir = scratch.path;
    const SquadSplit test_split = split_squad_by_article(dev_questions(), 0.25, 7);
    const SquadSplit validation_split = split_squad_by_article(test_split.train, 0.2, 9);
    EXPECT_EQ(titles_of(validation_split.eval).size(), 7u);  // round(0.2 x 36 articles)
    for (const std::string& title : titles_of(validation_split.eval)) EXPECT_EQ(titles_of(validation_split.train).count(title), 0u);

    const nlohmann::json limits = {{"max_train_examples", 24}, {"max_eval_examples", 30}};
    nlohmann::json settings = {{"train_files", {kDev}}, {"squad_eval_fraction", 0.25}, {"squad_split_seed", 7u},
                               {"validation_fraction", 0.2}, {"validation_seed", 9u}};
    settings.update(limits);
    std::unique_ptr<Task> task = make_task(squad_config(settings), {});
    write_squad(dir + "/train.json", validation_split.train);
    write_squad(dir + "/validation.json", validation_split.eval);
    write_squad(dir + "/test.json", test_split.eval);
    // Validation's halves for the accuracy budget, by article with the seed's complement.
    const SquadSplit halves = split_squad_by_article(validation_split.eval, 0.5, ~9ull);
    EXPECT_EQ(titles_of(halves.eval).size(), 4u);  // round(0.5 x 7), half away from zero
    write_squad(dir + "/ranking.json", halves.eval);
    write_squad(dir + "/checking.json", halves.train);
    auto reference = [&](const char* eval_file) {
        nlohmann::json parts = {{"train_files", {dir + "/train.json"}}, {"eval_files", {dir + "/" + eval_file}}};
        parts.update(limits);
        return make_task(squad_config(parts), {});
    };
    std::unique_ptr<Task> on_validation = reference("validation.json"), on_test = reference("test.json");
    EXPECT_EQ(task->train_lengths(), on_validation->train_lengths());
    const Metrics validation_scores = task->evaluate(8);
    EXPECT_EQ(validation_scores, on_validation->evaluate(8));
    task->select_eval_set(EvalSplit::Test);
    EXPECT_EQ(task->evaluate(8), on_test->evaluate(8));
    task->select_eval_set(EvalSplit::ValidationRanking);
    EXPECT_EQ(task->evaluate(8), reference("ranking.json")->evaluate(8));
    task->select_eval_set(EvalSplit::ValidationChecking);
    EXPECT_EQ(task->evaluate(8), reference("checking.json")->evaluate(8));
    task->select_eval_set(EvalSplit::Validation);
    EXPECT_EQ(task->evaluate(8), validation_scores);
    EXPECT_NE(error_of([&] { on_test->select_eval_set(EvalSplit::Validation); }).find("without a validation split"),
              std::string::npos);
}

// 8 questions from 8 articles to train on, and 32 questions of those articles to score (the 8
// and 24 unseen), so that a trained model's scores are neither all 0 nor all 100.
class TrainedSquadTask : public ::testing::Test {
protected:
    void SetUp() override {
        QDQ_REQUIRE_DATA_FILE(kDev);
        QDQ_REQUIRE_DATA_FILE(kVocab);
        seen_ = dir_.path + "/seen.json";
        scored_ = dir_.path + "/scored.json";
        write_squad(seen_, first_questions(8, 1));
        write_squad(scored_, first_questions(8, 4));
        task_ = make_task(squad_config({{"train_files", {seen_}}, {"eval_files", {scored_}}}), {});
    }

    // Exact match of predict()'s answers to the questions of `path`.
    double exact_match(const std::string& path) {
        std::unordered_map<std::string, std::string> predictions;
        const nlohmann::json answers = task_->predict(path, 8);
        for (const auto& [id, text] : answers.items()) predictions[id] = text;
        return squad_v1_evaluate(read_squad(path).examples, predictions).score.exact_match;
    }

    ScratchDir dir_{"qdq_squad_trained"};
    std::string seen_, scored_;
    std::unique_ptr<Task> task_;
};

TEST_F(TrainedSquadTask, OverfitsAHandfulOfQuestions) {
    EXPECT_LE(exact_match(seen_), 12.5) << "an untrained model should not know these answers";
    train_steps(*task_, 40, 5e-3);
    EXPECT_GE(exact_match(seen_), 87.5) << "at most one of the 8 trained questions may be missed";
}

// The reference is evaluate-v1.1.py's formula in Python over predict()'s JSON, the format the
// official script reads. Both sum per-question scores in question order in double precision,
// so they agree to rounding (EXPECT_DOUBLE_EQ: 4 ulps).
TEST_F(TrainedSquadTask, EvaluateEqualsTheOfficialScriptOnPredictOutput) {
    if (!fs::exists("/usr/bin/python3")) {
        const char* ci = std::getenv("CI");
        if (ci && std::string(ci) == "true") FAIL() << "/usr/bin/python3 is missing; CI=true, so this is a failure";
        GTEST_SKIP() << "/usr/bin/python3 is missing";
    }
    train_steps(*task_, 40, 5e-3);
    const Metrics scores = task_->evaluate(8);
    const std::string predictions = dir_.path + "/predictions.json";
    std::ofstream(predictions) << task_->predict(scored_, 8).dump();
    const nlohmann::json official = official_scores(dir_.path, scored_, predictions);
    ASSERT_FALSE(official.is_null()) << "/usr/bin/python3 could not score " << predictions;
    EXPECT_EQ(official["total"], 32);
    EXPECT_EQ(scores.counts.at("eval_examples"), 32);
    EXPECT_GT(official["exact_match"].get<double>(), 0.0);  // a mix of right and wrong answers
    EXPECT_LT(official["exact_match"].get<double>(), 100.0);
    EXPECT_DOUBLE_EQ(scores.scores.at("exact_match"), official["exact_match"].get<double>());
    EXPECT_DOUBLE_EQ(scores.scores.at("f1"), official["f1"].get<double>());
}

// Lowering both qa_outputs biases lowers every real logit alike and so cannot change an answer,
// unless a position past a window's end (a shorter window in a longer batch row, or past the
// batch) then outranks the real ones and takes the n_best_size candidate places. Rounding at
// logits near -20 (ulp 2e-6) could only flip a near tie; none happens with this seed.
TEST_F(TrainedSquadTask, PositionsPastAWindowNeverTakeAnAnswersPlace) {
    const nlohmann::json before = task_->predict(scored_, 8);
    for (NamedTensor p : task_->model().named_parameters())
        if (p.name == "qa_outputs.bias")
            for (int64_t i = 0; i < p.tensor.numel(); ++i) p.tensor.f32()[i] -= 20.0f;
    EXPECT_EQ(task_->predict(scored_, 8), before);
}

TEST(SquadTask, BadInputIsReportedWithItsFile) {
    QDQ_REQUIRE_DATA_FILE(kDev);
    QDQ_REQUIRE_DATA_FILE(kVocab);
    const ScratchDir scratch("qdq_squad_errors");
    const std::string& dir = scratch.path;
    const std::vector<SquadExample> two = first_questions(2, 1);
    const std::string good = dir + "/good.json";
    write_squad(good, two);

    SquadExample wordy = two[1];
    wordy.id = "wordy_question";
    wordy.question.clear();
    for (int i = 0; i < 200; ++i) wordy.question += "why ";
    write_squad(dir + "/wordy.json", {two[0], wordy});
    const std::string no_room = error_of([&] {
        make_task(squad_config({{"train_files", {good}}, {"eval_files", {dir + "/wordy.json"}}}), {});
    });
    EXPECT_NE(no_room.find(dir + "/wordy.json: SQuAD question wordy_question"), std::string::npos) << no_room;
    EXPECT_NE(no_room.find("data.max_seq_length 192"), std::string::npos) << no_room;

    std::unique_ptr<Task> task = make_task(squad_config({{"train_files", {good}}}), {false, false});
    const std::string missing = error_of([&] { task->predict(dir + "/missing.json", 8); });
    EXPECT_NE(missing.find(dir + "/missing.json"), std::string::npos) << missing;
    const std::string predict_no_room = error_of([&] { task->predict(dir + "/wordy.json", 8); });
    EXPECT_NE(predict_no_room.find(dir + "/wordy.json: SQuAD question wordy_question"), std::string::npos)
        << predict_no_room;

    nlohmann::json unanswerable = nlohmann::json::parse(std::ifstream(good));
    unanswerable["data"][1]["paragraphs"][0]["qas"][0]["is_impossible"] = true;
    unanswerable["data"][1]["paragraphs"][0]["qas"][0]["answers"] = nlohmann::json::array();
    std::ofstream(dir + "/v2.json") << unanswerable.dump();
    const std::string v2 =
        error_of([&] { make_task(squad_config({{"train_files", {dir + "/v2.json"}}}), {true, false}); });
    EXPECT_NE(v2.find(dir + "/v2.json: question " + two[1].id + " is unanswerable"), std::string::npos) << v2;

    const std::string both = error_of([&] {
        make_task(squad_config({{"train_files", {good}}, {"eval_files", {good}}, {"squad_eval_fraction", 0.5}}), {});
    });
    EXPECT_NE(both.find("squad_run.json: data.squad_eval_fraction > 0"), std::string::npos) << both;
    EXPECT_NE(both.find("data.eval_files must then be empty"), std::string::npos) << both;

    const std::string no_article = error_of([&] {  // round(0.2 x 2 articles) = 0
        make_task(squad_config({{"train_files", {good}}, {"squad_eval_fraction", 0.2}}), {});
    });
    EXPECT_NE(no_article.find("leaves no article of data.train_files for evaluation"), std::string::npos)
        << no_article;
}
