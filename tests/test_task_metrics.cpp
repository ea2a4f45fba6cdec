// A task's metrics as a type (trainers/task_metrics.h): which a results table shows per task, which
// are fractions shown in %, and the JSON every file holds them in. The reference for the JSON is
// the objects Task::evaluate returned before it returned Metrics, spelt out here as text: the
// files a run wrote then must read back to the same task and write back to the same bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "tests/support/expect_error.h"
#include "trainers/task_metrics.h"

using namespace qdq;
using qdq::testing::expect_error;

namespace {

// What each task's evaluate() wrote into eval_results.json before Metrics, compact (dump()).
constexpr const char* kClassification = R"({"accuracy":0.875,"eval_examples":32,"eval_loss":0.3125})";
constexpr const char* kSquad = R"({"eval_examples":40,"eval_windows":97,"exact_match":62.5,"f1":71.25})";
constexpr const char* kMlm =
    R"({"eval_examples":8,"eval_loss":3.25,"mlm_accuracy":0.4375,"perplexity":25.790339917193062,)"
    R"("wiki_examples":8,"wiki_loss":3.25,"wiki_mlm_accuracy":0.4375,"wiki_perplexity":25.790339917193062})";

Metrics read(const char* text) { return metrics_from_json(nlohmann::json::parse(text), "fp32", "results.json"); }

}  // namespace

TEST(TaskMetrics, FilesWrittenBeforeTheTypeReadToTheirTaskAndWriteBackTheSameBytes) {
    for (const auto& [text, task] : {std::pair{kClassification, TaskKind::classification},
                                     std::pair{kSquad, TaskKind::squad}, std::pair{kMlm, TaskKind::mlm}}) {
        const Metrics m = read(text);
        EXPECT_EQ(m.task, task) << text;
        EXPECT_EQ(metrics_to_json(m).dump(), text);
    }
    // Integers are counts, the rest scores, whatever their names.
    const Metrics squad = read(kSquad);
    EXPECT_EQ(squad.counts, (std::map<std::string, int64_t>{{"eval_examples", 40}, {"eval_windows", 97}}));
    EXPECT_EQ(squad.scores, (std::map<std::string, double>{{"exact_match", 62.5}, {"f1", 71.25}}));
    // A NaN loss (a diverged run) is null in the file and NaN again when read.
    const Metrics nan_loss = read(R"({"accuracy":0.5,"eval_examples":4,"eval_loss":null})");
    EXPECT_TRUE(std::isnan(nan_loss.scores.at("eval_loss")));
    EXPECT_EQ(metrics_to_json(nan_loss).dump(), R"({"accuracy":0.5,"eval_examples":4,"eval_loss":null})");
}

TEST(TaskMetrics, MetricsThatFitNoTaskOrTwoAreRefusedNamingTheFileAndKey) {
    expect_error([] { read(R"({"eval_loss":0.5,"eval_examples":4})"); },
                 {"results.json", "'fp32'", "no task's metrics", "accuracy for classification",
                  "exact_match and f1 for squad", "mlm_accuracy for mlm"});
    expect_error([] { read(R"({"f1":50.0,"eval_examples":4})"); }, {"'fp32'", "no task's metrics"});  // EM missing
    expect_error([] { read(R"({"accuracy":0.5,"exact_match":50.0,"f1":50.0})"); }, {"'fp32'", "more than one task"});
    expect_error([] { read(R"({"accuracy":"high"})"); }, {"results.json", "'fp32.accuracy'", "number"});
}

TEST(TaskMetrics, EachTaskShowsItsOwnMetricsMainLast) {
    EXPECT_EQ(shown_metrics(TaskKind::classification), (std::vector<std::string>{"accuracy"}));
    EXPECT_EQ(shown_metrics(TaskKind::squad), (std::vector<std::string>{"exact_match", "f1"}));
    EXPECT_EQ(shown_metrics(TaskKind::mlm), (std::vector<std::string>{"mlm_accuracy"}));
    // The task, not the names present, decides: SQuAD metrics read from a file show as SQuAD's.
    EXPECT_EQ(shown_metrics(read(kSquad).task).back(), "f1");
}

TEST(TaskMetrics, FractionsShowTimesAHundredAndPercentagesAsTheyAre) {
    EXPECT_EQ(read(kClassification).percent("accuracy"), 87.5);
    EXPECT_EQ(read(kSquad).percent("f1"), 71.25);  // the official script's scale, already in %
    EXPECT_EQ(read(kSquad).percent("exact_match"), 62.5);
    const Metrics mlm = read(kMlm);
    EXPECT_EQ(mlm.percent("mlm_accuracy"), 43.75);
    EXPECT_EQ(mlm.percent("wiki_mlm_accuracy"), 43.75);  // a named set's, as the total's
    EXPECT_EQ(metric_scale(TaskKind::mlm, "wiki_perplexity"), MetricScale::plain);
    // The same name is a fraction only where the task makes it one.
    EXPECT_EQ(metric_scale(TaskKind::classification, "accuracy"), MetricScale::fraction);
    EXPECT_EQ(metric_scale(TaskKind::squad, "accuracy"), MetricScale::plain);
    // A loss or a count is no percentage, and a missing metric is an error, not a zero.
    EXPECT_THROW(read(kClassification).percent("eval_loss"), std::invalid_argument);
    EXPECT_THROW(read(kClassification).percent("eval_examples"), std::out_of_range);
    EXPECT_THROW(read(kClassification).percent("f1"), std::out_of_range);
}

TEST(TaskMetrics, ValueFindsScoresAndCountsAndNamesTheSourceOfAMissingOne) {
    const Metrics m = read(kSquad);
    EXPECT_EQ(m.value("f1", "run.json"), 71.25);
    EXPECT_EQ(m.value("eval_windows", "run.json"), 97.0);
    EXPECT_FALSE(m.find("accuracy"));
    expect_error([&] { m.value("accuracy", "run.json"); }, {"run.json", "no metric 'accuracy'"});
}
