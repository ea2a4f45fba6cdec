// Held-out text for masked-LM: a corpus file sliced by documents (Hugging Face datasets'
// "train[:98%]" syntax) so that training and evaluation split one file, and named evaluation
// sets reported side by side. Slices are checked against documents counted by hand; each named
// set's metrics against the same file evaluated alone as the one unnamed set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "data/document_slice.h"
#include "data/text_corpus.h"
#include "tests/support/documents.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "trainers/run_config.h"
#include "trainers/task.h"

namespace qdq {
namespace {

using qdq::testing::expect_error;
using qdq::testing::documents_of;
using testing::TempDir;

// Ten documents "d0" ... "d9", with a blank line and an empty text that are not documents.
std::string ten_documents() {
    std::string jsonl;
    for (int i = 0; i < 10; ++i) {
        jsonl += "{\"text\": \"d" + std::to_string(i) + "\"}\n";
        if (i == 3) jsonl += "\n{\"text\": \"\"}\n";
    }
    return jsonl;
}

std::vector<std::string> numbered(int begin, int end) {
    std::vector<std::string> out;
    for (int i = begin; i < end; ++i) out.push_back(std::string("d") + std::to_string(i));
    return out;
}

TEST(DocumentSlice, IndicesAndPercentagesSelectDocumentsAsDatasetsSlicesASplit) {
    TempDir dir;
    const std::string file = dir.write("c.jsonl", ten_documents());
    EXPECT_EQ(documents_of(file), numbered(0, 10));
    EXPECT_EQ(documents_of(file + "[:]"), numbered(0, 10));
    EXPECT_EQ(documents_of(file + "[2:5]"), numbered(2, 5));
    EXPECT_EQ(documents_of(file + "[7:]"), numbered(7, 10));
    EXPECT_EQ(documents_of(file + "[:3]"), numbered(0, 3));
    EXPECT_EQ(documents_of(file + "[8:50]"), numbered(8, 10));
    EXPECT_TRUE(documents_of(file + "[5:5]").empty());
    EXPECT_TRUE(documents_of(file + "[12:]").empty());
    // 10 documents: 80% is document 8; 25% is 2.5, rounded to the nearest (away from zero).
    EXPECT_EQ(documents_of(file + "[:80%]"), numbered(0, 8));
    EXPECT_EQ(documents_of(file + "[80%:]"), numbered(8, 10));
    EXPECT_EQ(documents_of(file + "[25%:100%]"), numbered(3, 10));
    EXPECT_EQ(documents_of(file + "[:0%]"), numbered(0, 0));
}

TEST(DocumentSlice, TheTwoSidesOfOneCutShareNoDocumentAndMissNone) {
    TempDir dir;
    const std::string file = dir.write("c.jsonl", ten_documents());
    for (const char* cut : {"0%", "13%", "50%", "98%", "100%", "4"}) {
        std::vector<std::string> both = documents_of(file + "[:" + cut + "]");
        const std::vector<std::string> rest = documents_of(file + "[" + cut + ":]");
        both.insert(both.end(), rest.begin(), rest.end());
        EXPECT_EQ(both, numbered(0, 10)) << cut;
    }
}

TEST(DocumentSlice, MalformedSlicesAreRefusedNamingTheSpec) {
    for (const char* spec : {"c.jsonl[5]", "c.jsonl[1:2:3]", "c.jsonl[a:]", "c.jsonl[:-2]", "c.jsonl[:101%]",
                             "c.jsonl[1.5:]", "c.jsonl[%:]", "[1:2]"}) {
        try {
            parse_document_slice(spec);
            ADD_FAILURE() << spec << " was accepted";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(spec), std::string::npos) << e.what();
        }
    }
    const DocumentSlice plain = parse_document_slice("dir/c.jsonl");
    EXPECT_TRUE(plain.whole_file());
    EXPECT_EQ(plain.path, "dir/c.jsonl");
    const DocumentSlice sliced = parse_document_slice("dir/c[1].jsonl[2:50%]");
    EXPECT_EQ(sliced.path, "dir/c[1].jsonl");
    EXPECT_FALSE(sliced.begin->percent);
    EXPECT_EQ(sliced.begin->value, 2);
    EXPECT_TRUE(sliced.end->percent);
    EXPECT_EQ(sliced.end->value, 50);
}

// A corpus of sentences over a tiny vocabulary, in two files, and a config whose data section
// the test completes.
class NamedEvalSets : public ::testing::Test {
protected:
    void SetUp() override {
        dir_.write("vocab.txt",
                   "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\non\nmat\ndog\nran\n.\nto\npark\na\n"
                   "bird\nflew\nover\ntree\n");
        std::string reviews, articles;
        for (int i = 0; i < 12; ++i) {
            reviews += "{\"text\": \"the cat sat on the mat . the dog ran to the park .\"}\n";
            articles += "{\"text\": \"a bird flew over the tree . the bird sat on a tree .\"}\n";
        }
        dir_.write("reviews.jsonl", reviews);
        dir_.write("articles.jsonl", articles);
    }

    RunConfig config(const nlohmann::json& eval_files) const {
        nlohmann::json raw = {
            {"model",
             {{"config",
               {{"vocab_size", 20}, {"hidden_size", 32}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
                {"intermediate_size", 37}, {"max_position_embeddings", 64}}}}},
            {"data",
             {{"task", "mlm"}, {"data_dir", dir_.path().string()}, {"vocab", "vocab.txt"},
              {"train_files", "reviews.jsonl[:50%]"}, {"eval_files", eval_files}, {"max_seq_length", 16}}},
            {"training", {{"output_dir", (dir_.path() / "out").string()}, {"seed", uint64_t{5}}}}};
        return parse_run_config(raw, "run.json", ".");
    }

    Metrics evaluate(const nlohmann::json& eval_files) const {
        std::unique_ptr<Task> task = make_task(config(eval_files), {.train = false, .eval = true, .weights = true});
        return task->evaluate(4);
    }

    TempDir dir_;
};

TEST_F(NamedEvalSets, EachSetScoresAsItWouldAloneAndTheTotalPoolsMaskedTokens) {
    const Metrics both = evaluate({{"reviews", "reviews.jsonl[50%:]"}, {"articles", "articles.jsonl"}});
    const Metrics reviews = evaluate("reviews.jsonl[50%:]");
    const Metrics articles = evaluate("articles.jsonl");
    std::vector<std::string> scores;
    for (const auto& [name, value] : both.scores) scores.push_back(name);
    std::vector<std::string> named = score_names(TaskKind::mlm, {"reviews", "articles"});
    std::sort(named.begin(), named.end());
    EXPECT_EQ(scores, named);  // what metric_for_best_model may name
    for (const auto& [name, alone] : {std::pair{"reviews", reviews}, std::pair{"articles", articles}}) {
        const std::string p = std::string(name) + "_";
        EXPECT_EQ(both.scores.at(p + "loss"), alone.scores.at("eval_loss")) << name;
        EXPECT_EQ(both.scores.at(p + "mlm_accuracy"), alone.scores.at("mlm_accuracy")) << name;
        EXPECT_EQ(both.scores.at(p + "perplexity"), alone.scores.at("perplexity")) << name;
        EXPECT_EQ(both.counts.at(p + "examples"), alone.counts.at("eval_examples")) << name;
        // Each set's accuracy is a fraction, shown in % as the total's is.
        EXPECT_EQ(metric_scale(both.task, p + "mlm_accuracy"), MetricScale::fraction) << name;
    }
    EXPECT_EQ(both.counts.at("eval_examples"), reviews.counts.at("eval_examples") + articles.counts.at("eval_examples"));
    // The total is a mean over both sets' masked tokens, whose counts are not reported: it
    // lies between the two sets' losses, and its perplexity is exp of it.
    const double a = both.scores.at("reviews_loss"), b = both.scores.at("articles_loss");
    const double total = both.scores.at("eval_loss");
    EXPECT_GE(total, std::min(a, b));
    EXPECT_LE(total, std::max(a, b));
    EXPECT_DOUBLE_EQ(both.scores.at("perplexity"), std::exp(total));
}

TEST_F(NamedEvalSets, TheWrittenConfigKeepsTheNamesAndSlices) {
    const RunConfig c = config({{"wiki", "articles.jsonl[90%:]"}, {"imdb", {"reviews.jsonl"}}});
    const nlohmann::json written = run_config_to_json(c)["data"];
    EXPECT_EQ(written["eval_files"]["wiki"], nlohmann::json::array({(dir_.path() / "articles.jsonl[90%:]").string()}));
    EXPECT_EQ(written["eval_files"]["imdb"], nlohmann::json::array({(dir_.path() / "reviews.jsonl").string()}));
    EXPECT_EQ(written["train_files"], nlohmann::json::array({(dir_.path() / "reviews.jsonl[:50%]").string()}));
    const RunConfig again = parse_run_config(run_config_to_json(c), "written.json", ".");
    EXPECT_EQ(run_config_to_json(again), run_config_to_json(c));
}

TEST_F(NamedEvalSets, BadSetsAndSlicesNameTheKey) {
    expect_error([&] { config(nlohmann::json::object()); }, {"run.json", "data.eval_files", "no evaluation set"});
    expect_error([&] { config({{"Wiki Set", "articles.jsonl"}}); }, {"data.eval_files", "Wiki Set"});
    expect_error([&] { config({{"wiki", 3}}); }, {"data.eval_files.wiki"});
    expect_error([&] { config({{"wiki", "articles.jsonl[:5]x"}}); }, {"data.eval_files", "missing file"});
    expect_error([&] { config({{"wiki", "articles.jsonl[:5%%]"}}); }, {"data.eval_files", "slice bound"});
    expect_error([&] { config({{"wiki", "gone.jsonl[:5]"}}); }, {"data.eval_files", "missing file", "gone.jsonl"});
    nlohmann::json classification = run_config_to_json(config("articles.jsonl"));
    classification["data"]["task"] = "classification";
    classification["data"]["dataset"] = "imdb";
    classification["data"]["train_files"] = "articles.jsonl";
    classification["data"]["eval_files"] = {{"a", "articles.jsonl"}};
    expect_error([&] { parse_run_config(classification, "cls.json", "."); },
                 {"cls.json", "data.eval_files", "for data.task mlm"});
    classification["data"]["eval_files"] = "articles.jsonl[:50%]";
    expect_error([&] { parse_run_config(classification, "cls.json", "."); },
                 {"cls.json", "data.eval_files", "slice of documents is for data.task mlm"});
}

TEST_F(NamedEvalSets, AnEmptySliceIsAnErrorNamingTheSet) {
    expect_error([&] { evaluate({{"wiki", "articles.jsonl[100%:]"}}); }, {"run.json", "data.eval_files.wiki", "no text"});
}

}  // namespace
}  // namespace qdq
