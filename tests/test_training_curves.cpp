// `qdqtrain curves`: which series of a metrics.jsonl land on which chart, against the step or
// the input tokens seen, and a malformed log named by file and line.
#include <gtest/gtest.h>

#include <fstream>

#include "report/training_curves.h"
#include "tests/support/temp_dir.h"

namespace qdq {
namespace {

using testing::TempDir;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const char* kPretrainingLog =
    "{\"step\":50,\"num_input_tokens_seen\":409600,\"loss\":7.5,\"learning_rate\":0.001}\n"
    "{\"step\":100,\"num_input_tokens_seen\":819200,\"loss\":7.0}\n"
    "{\"step\":100,\"num_input_tokens_seen\":819200,\"eval_loss\":6.9,\"eval_perplexity\":992.3,"
    "\"eval_examples\":1024,\"eval_imdb_loss\":6.5,\"eval_wiki_loss\":7.3,\"eval_imdb_mlm_accuracy\":0.1,"
    "\"eval_wiki_mlm_accuracy\":0.12,\"eval_imdb_perplexity\":665.1}\n";

TEST(TrainingCurves, NamedSetLossesJoinTheLossChartAndPerplexitiesAreLeftOut) {
    TempDir dir;
    dir.write("run/metrics.jsonl", kPretrainingLog);
    const std::string prefix = (dir.path() / "curves").string();
    write_training_curves((dir.path() / "run").string(), prefix, true);
    const std::string loss = read_text(prefix + "_loss.svg"), eval = read_text(prefix + "_eval.svg");
    for (const char* series : {"train loss", "eval_loss", "eval_imdb_loss", "eval_wiki_loss", "input tokens seen"})
        EXPECT_NE(loss.find(series), std::string::npos) << series;
    for (const char* series : {"eval_imdb_mlm_accuracy", "eval_wiki_mlm_accuracy", "input tokens seen"})
        EXPECT_NE(eval.find(series), std::string::npos) << series;
    for (const std::string* chart : {&loss, &eval}) {
        EXPECT_EQ(chart->find("perplexity"), std::string::npos);
        EXPECT_EQ(chart->find("examples"), std::string::npos);
    }
    EXPECT_EQ(loss.find("mlm_accuracy"), std::string::npos);
    write_training_curves((dir.path() / "run").string(), prefix, false);
    EXPECT_EQ(read_text(prefix + "_loss.svg").find("input tokens seen"), std::string::npos);
}

TEST(TrainingCurves, AMalformedLogNamesFileAndLine) {
    TempDir dir;
    dir.write("run/metrics.jsonl", "{\"step\":1,\"loss\":2}\n{\"loss\":2}\n");
    try {
        write_training_curves((dir.path() / "run").string(), (dir.path() / "c").string());
        ADD_FAILURE() << "a record without a step was plotted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("metrics.jsonl:2"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace qdq
