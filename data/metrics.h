// Evaluation metrics: classification accuracy with its confusion matrix, and the official SQuAD
// v1.1 evaluation (evaluate-v1.1.py: exact match and token-bag F1, best over the gold answers,
// means ×100 over every question of the data set).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/examples.h"

namespace qdq {

struct ClassificationMetrics {
    int32_t num_classes = 0;
    int64_t total = 0, correct = 0;
    double accuracy = 0;                  // correct / total; 0 when there is nothing to count
    std::vector<int64_t> gold_counts;       // [class]: examples whose gold label is the class
    std::vector<int64_t> predicted_counts;  // [class]: examples predicted as the class
    std::vector<int64_t> correct_counts;    // [class]: gold and prediction both the class
    std::vector<int64_t> confusion;         // [gold * num_classes + predicted]
};

// Throws std::invalid_argument if the sizes differ or a label is outside [0, num_classes).
ClassificationMetrics classification_metrics(std::span<const int32_t> gold, std::span<const int32_t> predicted,
                                             int32_t num_classes);

// normalize_answer of evaluate-v1.1.py: str.lower(), drop the characters of Python's
// string.punctuation (ASCII only: “smart quotes”, « » and ¿ stay), replace the words a, an and
// the (as re's \b(a|an|the)\b sees words) with a space, then split on whitespace and join with
// single spaces. Unicode is treated as Python 3 does (data/python_text.h), with one difference
// left: letters added to Unicode after 14.0 are lowercased, as newer Pythons do and 3.11 does not.
std::string normalize_squad_answer(std::string_view text);

// 1 when the normalized texts are equal, else 0.
double squad_exact_match(std::string_view prediction, std::string_view gold);
// Harmonic mean of token precision and recall over the bags (multisets) of normalized tokens;
// 0 when no token is shared, so also when both normalize to nothing (the v1.1 script's rule,
// while exact match then says 1).
double squad_f1(std::string_view prediction, std::string_view gold);

struct SquadScore {
    double exact_match = 0, f1 = 0;  // per question: 0..1; over a data set: means ×100
};

// The best of each measure over the gold answers (metric_max_over_ground_truths).
SquadScore squad_question_score(std::string_view prediction, std::span<const SquadAnswer> golds);

struct SquadEvaluation {
    SquadScore score;
    int64_t total = 0;       // questions in the data set
    int64_t unanswered = 0;  // without a prediction: they score 0, as in the official script
};

// Every example is a question of the data set; predictions are by question id.
SquadEvaluation squad_v1_evaluate(std::span<const SquadExample> examples,
                                  const std::unordered_map<std::string, std::string>& predictions);

}  // namespace qdq
