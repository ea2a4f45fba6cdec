#include "data/metrics.h"

#include <algorithm>
#include <stdexcept>

#include "data/python_text.h"

namespace qdq {
namespace {

// Python's string.punctuation.
bool is_ascii_punctuation(char32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

bool is_article(std::u32string_view word) { return word == U"a" || word == U"an" || word == U"the"; }

// The normalized answer as its whitespace-separated tokens.
std::vector<std::string> squad_tokens(std::string_view text) {
    std::u32string chars = python_text::lower(python_text::decode(text));
    std::erase_if(chars, is_ascii_punctuation);
    // \b(a|an|the)\b matches exactly the maximal runs of \w characters that spell an article.
    std::u32string spaced;
    spaced.reserve(chars.size());
    for (size_t i = 0; i < chars.size();) {
        size_t end = i;
        while (end < chars.size() && python_text::is_word(chars[end])) ++end;
        if (end == i) {
            spaced.push_back(chars[i++]);
            continue;
        }
        const std::u32string_view word(chars.data() + i, end - i);
        if (is_article(word))
            spaced.push_back(U' ');
        else
            spaced.append(word);
        i = end;
    }
    std::vector<std::string> tokens;
    for (size_t i = 0; i < spaced.size();) {
        if (python_text::is_space(spaced[i])) {
            ++i;
            continue;
        }
        size_t end = i;
        while (end < spaced.size() && !python_text::is_space(spaced[end])) ++end;
        tokens.push_back(python_text::encode(std::u32string_view(spaced).substr(i, end - i)));
        i = end;
    }
    return tokens;
}

std::string join(const std::vector<std::string>& tokens) {
    std::string out;
    for (const std::string& t : tokens) {
        if (!out.empty()) out += ' ';
        out += t;
    }
    return out;
}

// The size of the multiset intersection (Counter & Counter).
int64_t shared_token_count(std::vector<std::string> a, std::vector<std::string> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    int64_t shared = 0;
    for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
        if (a[i] < b[j]) {
            ++i;
        } else if (b[j] < a[i]) {
            ++j;
        } else {
            ++shared, ++i, ++j;
        }
    }
    return shared;
}

}  // namespace

ClassificationMetrics classification_metrics(std::span<const int32_t> gold, std::span<const int32_t> predicted,
                                             int32_t num_classes) {
    if (gold.size() != predicted.size())
        throw std::invalid_argument("classification_metrics: " + std::to_string(gold.size()) + " gold labels but " +
                                    std::to_string(predicted.size()) + " predictions");
    if (num_classes <= 0) throw std::invalid_argument("classification_metrics: num_classes must be positive");
    ClassificationMetrics m;
    m.num_classes = num_classes;
    m.gold_counts.assign(num_classes, 0);
    m.predicted_counts.assign(num_classes, 0);
    m.correct_counts.assign(num_classes, 0);
    m.confusion.assign((size_t)num_classes * num_classes, 0);
    for (size_t i = 0; i < gold.size(); ++i) {
        const int32_t g = gold[i], p = predicted[i];
        if (g < 0 || g >= num_classes || p < 0 || p >= num_classes)
            throw std::invalid_argument("classification_metrics: example " + std::to_string(i) + " has gold " +
                                        std::to_string(g) + " and prediction " + std::to_string(p) +
                                        ", outside [0, " + std::to_string(num_classes) + ")");
        ++m.gold_counts[g];
        ++m.predicted_counts[p];
        ++m.confusion[(size_t)g * num_classes + p];
        if (g == p) ++m.correct_counts[g], ++m.correct;
    }
    m.total = (int64_t)gold.size();
    m.accuracy = m.total ? (double)m.correct / (double)m.total : 0.0;
    return m;
}

std::string normalize_squad_answer(std::string_view text) { return join(squad_tokens(text)); }

double squad_exact_match(std::string_view prediction, std::string_view gold) {
    return squad_tokens(prediction) == squad_tokens(gold) ? 1.0 : 0.0;
}

double squad_f1(std::string_view prediction, std::string_view gold) {
    std::vector<std::string> p = squad_tokens(prediction), g = squad_tokens(gold);
    const double p_size = (double)p.size(), g_size = (double)g.size();
    const int64_t shared = shared_token_count(std::move(p), std::move(g));
    if (shared == 0) return 0.0;
    // The script's order of operations, so that sums over a data set agree to the last bit.
    const double precision = 1.0 * (double)shared / p_size;
    const double recall = 1.0 * (double)shared / g_size;
    return (2 * precision * recall) / (precision + recall);
}

SquadScore squad_question_score(std::string_view prediction, std::span<const SquadAnswer> golds) {
    SquadScore best;
    for (const SquadAnswer& gold : golds) {
        best.exact_match = std::max(best.exact_match, squad_exact_match(prediction, gold.text));
        best.f1 = std::max(best.f1, squad_f1(prediction, gold.text));
    }
    return best;
}

SquadEvaluation squad_v1_evaluate(std::span<const SquadExample> examples,
                                  const std::unordered_map<std::string, std::string>& predictions) {
    SquadEvaluation e;
    double exact_match = 0, f1 = 0;
    for (const SquadExample& example : examples) {
        ++e.total;
        const auto it = predictions.find(example.id);
        if (it == predictions.end()) {
            ++e.unanswered;
            continue;
        }
        const SquadScore s = squad_question_score(it->second, example.answers);
        exact_match += s.exact_match;
        f1 += s.f1;
    }
    if (e.total > 0) {
        e.score.exact_match = 100.0 * exact_match / (double)e.total;
        e.score.f1 = 100.0 * f1 / (double)e.total;
    }
    return e;
}

}  // namespace qdq
