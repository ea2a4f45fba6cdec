// The validation split (data.validation_fraction, trainers/task.h): the draw itself and its
// halves, and a classification task that trains on the rest and evaluates on the held-out
// examples (or either half) until told to evaluate on the test set (data.eval_files). SQuAD's split by article: test_squad_task.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/run_config.h"
#include "trainers/task.h"

using namespace qdq;
using namespace qdq::testing;

// True when `a` and `b` are each in order, disjoint, and together `whole` (sorted).
::testing::AssertionResult splits_in_order(const std::vector<size_t>& a, const std::vector<size_t>& b,
                                           const std::vector<size_t>& whole) {
    if (!std::is_sorted(a.begin(), a.end()) || !std::is_sorted(b.begin(), b.end()))
        return ::testing::AssertionFailure() << "a part is out of file order";
    std::vector<size_t> both = a;
    both.insert(both.end(), b.begin(), b.end());
    std::sort(both.begin(), both.end());
    if (both != whole) return ::testing::AssertionFailure() << "the parts overlap or miss an index";
    return ::testing::AssertionSuccess();
}

TEST(ValidationSplit, DrawsTheFractionDisjointInFileOrder) {
    const SplitIndices a = validation_split(100, 0.1, 42);
    ASSERT_EQ(a.validation.size(), 10u);
    ASSERT_EQ(a.train.size(), 90u);
    std::vector<size_t> expected(100);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_TRUE(splits_in_order(a.train, a.validation, expected));
    EXPECT_EQ(validation_split(100, 0.1, 42).validation, a.validation);
    EXPECT_NE(validation_split(100, 0.1, 43).validation, a.validation);
    EXPECT_NE(a.validation, std::vector<size_t>(expected.begin(), expected.begin() + 10));  // drawn, not the first
    expect_error([] { validation_split(100, 0.004, 42); }, {"data.validation_fraction", "no validation example"});
    expect_error([] { validation_split(1, 0.6, 42); }, {"data.validation_fraction", "no training example"});
}

TEST(ValidationSplit, HalvesTheValidationIndicesDisjointInFileOrder) {
    const std::vector<size_t> validation = validation_split(100, 0.15, 42).validation;
    const ValidationHalves halves = validation_halves(validation, 42);
    ASSERT_EQ(halves.ranking.size(), 7u);
    ASSERT_EQ(halves.checking.size(), 8u);
    EXPECT_TRUE(splits_in_order(halves.ranking, halves.checking, validation));
    EXPECT_EQ(validation_halves(validation, 42).ranking, halves.ranking);
    EXPECT_NE(validation_halves(validation, 43).ranking, halves.ranking);
    EXPECT_NE(halves.ranking, std::vector<size_t>(validation.begin(), validation.begin() + 7));  // drawn, not the first
    EXPECT_TRUE(validation_halves({5}, 42).ranking.empty());
    EXPECT_TRUE(validation_halves({5}, 42).checking.empty());
}

TEST(ValidationSplit, ClassificationTrainsOnTheRestAndEvaluatesOnValidationThenTest) {
    TempDir dir;
    write_task_files(dir);  // 64 training examples, 32 to evaluate
    nlohmann::json raw = tiny_config(dir, "run");
    raw["data"]["validation_fraction"] = 0.25;
    std::unique_ptr<Task> task = make_task(parse_run_config(raw, "run.json", "."), {true, true});
    EXPECT_EQ(task->train_size(), 48);
    EXPECT_EQ(task->evaluate(16).counts.at("eval_examples"), 16);
    task->select_eval_set(EvalSplit::Test);
    const Metrics test = task->evaluate(16);
    EXPECT_EQ(test.counts.at("eval_examples"), 32);
    task->select_eval_set(EvalSplit::Validation);
    const Metrics validation = task->evaluate(16);
    EXPECT_EQ(validation.counts.at("eval_examples"), 16);

    // Validation's halves, 8 and 8: together they score as validation does.
    task->select_eval_set(EvalSplit::ValidationRanking);
    const Metrics ranking = task->evaluate(16);
    task->select_eval_set(EvalSplit::ValidationChecking);
    const Metrics checking = task->evaluate(16);
    EXPECT_EQ(ranking.counts.at("eval_examples"), 8);
    EXPECT_EQ(checking.counts.at("eval_examples"), 8);
    EXPECT_NEAR(ranking.scores.at("accuracy") + checking.scores.at("accuracy"), 2 * validation.scores.at("accuracy"),
                1e-12);
    task->select_eval_set(EvalSplit::Test);
    EXPECT_EQ(task->evaluate(16), test);

    // The test set is the task's without a split, which has no validation set.
    raw["data"].erase("validation_fraction");
    std::unique_ptr<Task> plain = make_task(parse_run_config(raw, "run.json", "."), {true, true});
    EXPECT_EQ(plain->train_size(), 64);
    EXPECT_EQ(plain->evaluate(16), test);
    expect_error([&] { plain->select_eval_set(EvalSplit::Validation); }, {"without a validation split"});

    // The validation examples come out of training: training lengths are the rest's.
    raw["data"]["validation_fraction"] = 0.25;
    const SplitIndices parts = validation_split(64, 0.25, 42);
    std::vector<int32_t> expected;
    for (size_t i : parts.train) expected.push_back(plain->train_lengths()[i]);
    EXPECT_EQ(task->train_lengths(), expected);
    raw["data"]["validation_fraction"] = 1.0;
    expect_error([&] { parse_run_config(raw, "run.json", "."); }, {"run.json", "data.validation_fraction", "[0, 1)"});
}
