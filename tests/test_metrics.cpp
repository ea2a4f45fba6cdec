// Metrics (data/metrics.h), the Python string semantics under them (data/python_text.h), and the
// classification features whose predictions they score (data/classification_features.h).
//
// SQuAD: tests/fixtures/squad_metric_reference.json holds what the official v1.1 formula,
// re-stated in make_squad_metric_reference.py and run by Python 3.11, scores for pairs written
// there and for predictions built by recipe from dev-set questions. Every number must agree to
// the last bit: the C++ follows the script's order of floating-point operations.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "data/classification_features.h"
#include "data/data_dir.h"
#include "data/metrics.h"
#include "data/python_text.h"
#include "data/squad_reader.h"
#include "tests/support/data.h"
#include "tests/support/fixture.h"

namespace qdq {
namespace {

using nlohmann::json;

constexpr const char* kSquadDev = "squad/dev-v1.1.json.gz";

// ---- classification ----

TEST(ClassificationMetrics, CountsAndConfusion) {
    const std::vector<int32_t> gold = {0, 0, 0, 1, 1, 2, 2, 2, 2};
    const std::vector<int32_t> predicted = {0, 1, 0, 1, 2, 2, 2, 0, 2};
    const ClassificationMetrics m = classification_metrics(gold, predicted, 3);
    EXPECT_EQ(m.total, 9);
    EXPECT_EQ(m.correct, 6);
    EXPECT_DOUBLE_EQ(m.accuracy, 6.0 / 9.0);
    EXPECT_EQ(m.gold_counts, (std::vector<int64_t>{3, 2, 4}));
    EXPECT_EQ(m.predicted_counts, (std::vector<int64_t>{3, 2, 4}));
    EXPECT_EQ(m.correct_counts, (std::vector<int64_t>{2, 1, 3}));
    // Rows gold, columns predicted.
    EXPECT_EQ(m.confusion, (std::vector<int64_t>{2, 1, 0,  //
                                                 0, 1, 1,  //
                                                 1, 0, 3}));
}

TEST(ClassificationMetrics, ClassesNeverSeenAndNothingToCount) {
    const ClassificationMetrics m = classification_metrics(std::vector<int32_t>{1, 1}, std::vector<int32_t>{1, 0}, 4);
    EXPECT_EQ(m.gold_counts, (std::vector<int64_t>{0, 2, 0, 0}));
    EXPECT_EQ(m.confusion[1 * 4 + 0], 1);
    EXPECT_DOUBLE_EQ(m.accuracy, 0.5);
    const ClassificationMetrics empty = classification_metrics({}, {}, 2);
    EXPECT_EQ(empty.total, 0);
    EXPECT_EQ(empty.accuracy, 0.0);
    EXPECT_EQ(empty.confusion, (std::vector<int64_t>(4, 0)));
}

TEST(ClassificationMetrics, RejectsMismatchesAndLabelsOutOfRange) {
    const std::vector<int32_t> two = {0, 1}, one = {0};
    EXPECT_THROW(classification_metrics(two, one, 2), std::invalid_argument);
    EXPECT_THROW(classification_metrics(two, std::vector<int32_t>{0, 2}, 2), std::invalid_argument);
    EXPECT_THROW(classification_metrics(std::vector<int32_t>{-1}, one, 2), std::invalid_argument);
    EXPECT_THROW(classification_metrics(two, two, 0), std::invalid_argument);
}

// Single texts and pairs, longest_first truncation (checked against tokenizers in
// test_tokenizer.cpp), unpadded.
TEST(ClassificationFeatures, SingleTextsAndPairs) {
    const auto path = std::filesystem::temp_directory_path() / ("qdq_metrics_vocab_" + std::to_string(getpid()));
    std::ofstream(path) << "[PAD]\n[UNK]\n[CLS]\n[SEP]\ngood\nbad\nfilm\nvery\n";
    const Tokenizer tokenizer = load_tokenizer(path.string(), true);
    std::filesystem::remove(path);
    const std::vector<TextExample> examples = {{"s", "Very good film", "", 1}, {"p", "very very bad", "good film", 2}};
    const std::vector<Encoding> f = classification_encodings(tokenizer, examples, 7);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].ids, (std::vector<int32_t>{2, 7, 4, 6, 3}));
    EXPECT_EQ(f[0].token_type_ids, (std::vector<int32_t>(5, 0)));
    EXPECT_EQ(f[0].attention_mask, (std::vector<int32_t>(5, 1)));
    EXPECT_TRUE(f[0].offsets.empty());
    // 3 + 2 tokens in a budget of 4: the longer first text loses one.
    EXPECT_EQ(f[1].ids, (std::vector<int32_t>{2, 7, 7, 3, 4, 6, 3}));
    EXPECT_EQ(f[1].token_type_ids, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1}));
    EXPECT_EQ(classification_encoding(tokenizer, examples[1], 16).ids.size(), 8u);
    EXPECT_THROW(classification_encoding(tokenizer, examples[1], 2), std::invalid_argument);
}

// ---- Python string semantics ----

TEST(PythonText, LstripAndLower) {
    EXPECT_EQ(python_text::lstrip(" \t\u00a0\x1c\u3000Who? "), "Who? ");
    EXPECT_EQ(python_text::lstrip("\u200bWho"), "\u200bWho");  // not str.isspace()
    EXPECT_EQ(python_text::lstrip("   "), "");
    const auto lower = [](std::string_view s) { return python_text::encode(python_text::lower(python_text::decode(s))); };
    EXPECT_EQ(lower("ΣΑΣ ΟΔΟΣ. Σ AΣB"), "σας οδος. σ aσb");
    EXPECT_EQ(lower("İ"), "i\u0307");
    EXPECT_THROW(python_text::decode("\xC3"), std::invalid_argument);
}

TEST(PythonText, CharClasses) {
    using namespace python_text;
    EXPECT_TRUE(is_word(U'a') && is_word(U'_') && is_word(U'7') && is_word(U'é') && is_word(U'日'));
    EXPECT_TRUE(is_word(U'½') && is_word(U'²') && is_word(U'Ⅻ'));  // numerics count
    EXPECT_FALSE(is_word(U'\u0301') || is_word(U'-') || is_word(U'\u00ad') || is_word(U'😀'));
    EXPECT_TRUE(is_space(U'\x1c') && is_space(U'\u0085') && is_space(U'\u2029'));
    EXPECT_FALSE(is_space(U'\u200b') || is_space(U'\ufeff') || is_space(U'\u180e'));
    EXPECT_TRUE(char_classes(U'\'') & kCaseIgnorable);
    EXPECT_TRUE(char_classes(U'ʰ') & kCased && char_classes(U'ʰ') & kCaseIgnorable);
}

// ---- SQuAD v1.1 ----

const json& metric_reference() {
    static const json root = qdq::testing::read_fixture_json("squad_metric_reference.json", "tests/fixtures/make_squad_metric_reference.py");
    return root;
}

TEST(SquadMetric, HandWrittenPairsMatchTheOfficialFormula) {
    // The character tables were measured from a Python of the same Unicode version.
    const std::string reference = metric_reference().at("header").at("reference");
    EXPECT_NE(reference.find(std::string("unicodedata ") + python_text::kUnicodeVersion), std::string::npos);
    int checked = 0;
    for (const json& c : metric_reference().at("pairs")) {
        const std::string prediction = c.at("prediction"), gold = c.at("gold");
        SCOPED_TRACE("prediction " + json(prediction).dump() + ", gold " + json(gold).dump());
        EXPECT_EQ(normalize_squad_answer(prediction), c.at("normalized_prediction").get<std::string>());
        EXPECT_EQ(normalize_squad_answer(gold), c.at("normalized_gold").get<std::string>());
        EXPECT_EQ(squad_exact_match(prediction, gold), c.at("exact_match").get<double>());
        EXPECT_EQ(squad_f1(prediction, gold), c.at("f1").get<double>());
        ++checked;
    }
    EXPECT_GT(checked, 80);
}

const std::vector<SquadExample>& dev_examples() {
    static const std::vector<SquadExample> examples = read_squad(data_path(kSquadDev)).examples;
    return examples;
}

// Python str slicing, in code points, with its clamping.
std::string slice(const std::u32string& text, int64_t begin, int64_t end) {
    begin = std::clamp<int64_t>(begin, 0, (int64_t)text.size());
    end = std::clamp<int64_t>(end, 0, (int64_t)text.size());
    return begin < end ? python_text::encode(std::u32string_view(text).substr(begin, end - begin)) : "";
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
        text.replace(pos, from.size(), to);
    return text;
}

// build_prediction() of make_squad_metric_reference.py.
std::string build_prediction(const json& recipe, const std::vector<SquadExample>& examples, size_t index) {
    const SquadExample& q = examples[index];
    const auto answer = [&](int64_t k) -> const SquadAnswer& { return q.answers[k % (int64_t)q.answers.size()]; };
    std::string text;
    if (recipe.contains("gold")) {
        text = answer(recipe.at("gold")).text;
    } else if (recipe.contains("span")) {
        const json& span = recipe.at("span");
        const SquadAnswer& a = answer(span[0]);
        const int64_t length = (int64_t)python_text::decode(a.text).size();
        text = slice(python_text::decode(q.context), a.answer_start + span[1].get<int64_t>(),
                     a.answer_start + length + span[2].get<int64_t>());
    } else if (recipe.contains("context")) {
        text = slice(python_text::decode(q.context), recipe.at("context")[0], recipe.at("context")[1]);
    } else if (recipe.contains("other")) {
        text = examples[(index + recipe.at("other").get<size_t>()) % examples.size()].answers.front().text;
    } else {
        text = recipe.at("text");
    }
    if (recipe.contains("replace_spaces")) text = replace_all(text, " ", recipe.at("replace_spaces"));
    if (recipe.value("ascii_upper", false))
        for (char& c : text)
            if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    return recipe.value("prefix", std::string()) + text + recipe.value("suffix", std::string());
}

TEST(SquadMetric, RecipePredictionsOnTheDevSetMatchTheOfficialFormula) {
    QDQ_REQUIRE_DATA_FILE(kSquadDev);
    const std::vector<SquadExample>& examples = dev_examples();
    std::unordered_map<std::string, size_t> index_of;
    for (size_t i = 0; i < examples.size(); ++i) index_of[examples[i].id] = i;
    std::unordered_map<std::string, std::string> predictions;
    int scored = 0;
    for (const json& c : metric_reference().at("predictions")) {
        const json& recipe = c.at("recipe");
        if (recipe.value("missing", false)) continue;
        const size_t index = index_of.at(c.at("id"));
        const std::string prediction = build_prediction(recipe, examples, index);
        predictions[examples[index].id] = prediction;
        const SquadScore s = squad_question_score(prediction, examples[index].answers);
        EXPECT_EQ(s.exact_match, c.at("exact_match").get<double>()) << c.at("id") << " " << recipe.dump();
        EXPECT_EQ(s.f1, c.at("f1").get<double>()) << c.at("id") << " " << recipe.dump();
        ++scored;
    }
    EXPECT_GT(scored, 250);
    const json& overall = metric_reference().at("overall");
    const SquadEvaluation e = squad_v1_evaluate(examples, predictions);
    EXPECT_EQ(e.total, overall.at("total").get<int64_t>());
    EXPECT_EQ(e.unanswered, e.total - (int64_t)predictions.size());
    EXPECT_EQ(e.score.exact_match, overall.at("exact_match").get<double>());
    EXPECT_EQ(e.score.f1, overall.at("f1").get<double>());
}

TEST(SquadMetric, GoldAnswersScoreFull) {
    QDQ_REQUIRE_DATA_FILE(kSquadDev);
    std::unordered_map<std::string, std::string> predictions;
    for (const SquadExample& e : dev_examples()) predictions[e.id] = e.answers.front().text;
    const SquadEvaluation e = squad_v1_evaluate(dev_examples(), predictions);
    EXPECT_EQ(e.total, 10570);
    EXPECT_EQ(e.unanswered, 0);
    EXPECT_EQ(e.score.exact_match, 100.0);
    EXPECT_EQ(e.score.f1, 100.0);
}

TEST(SquadMetric, EmptyAnswersAndMissingPredictions) {
    // v1.1's f1_score returns 0 when no token is shared, so also for two empty answers.
    EXPECT_EQ(squad_exact_match("The", "a"), 1.0);
    EXPECT_EQ(squad_f1("The", "a"), 0.0);
    std::vector<SquadExample> examples(4);
    for (int i = 0; i < 4; ++i) {
        examples[i].id = "q" + std::to_string(i);
        examples[i].answers = {{"the cat sat", 0}, {"a dog", 0}};
    }
    const SquadEvaluation e = squad_v1_evaluate(examples, {{"q0", "Cat sat."}, {"q1", "dog"}, {"q2", "the cat"}});
    EXPECT_EQ(e.unanswered, 1);
    EXPECT_DOUBLE_EQ(e.score.exact_match, 100.0 * 2 / 4);
    EXPECT_DOUBLE_EQ(e.score.f1, 100.0 * (1 + 1 + 2.0 / 3) / 4);
    EXPECT_EQ(squad_v1_evaluate({}, {}).score.f1, 0.0);
    EXPECT_THROW(normalize_squad_answer("\xFF"), std::invalid_argument);
}

}  // namespace
}  // namespace qdq
