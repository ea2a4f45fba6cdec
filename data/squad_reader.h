// SQuAD JSON (v1.1, and v2.0's extra fields), plain or *.json.gz, into SquadExample, one per
// question, in file order.
//
// Every gold answer's answer_start is checked: SQuAD counts it in code points of the context
// (Python str indices), so context[answer_start : answer_start + len(text)] must equal text in
// code points, not bytes. A mismatch is an error naming the question id, unless
// skip_mismatched_answers is set. SQuAD v2: is_impossible is read, and its plausible_answers
// (not gold answers, so not kept) are accepted without being checked. A question that is not
// impossible but has no answer is an error: nothing could train or score on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/examples.h"

namespace qdq {

struct SquadReadOptions {
    // Drop an answer whose offset does not match and count it (stats.skipped_answers); a
    // question left with no answer is dropped too (stats.skipped_questions).
    bool skip_mismatched_answers = false;
};

struct SquadStats {
    int64_t articles = 0, paragraphs = 0;
    int64_t questions = 0, answers = 0;  // as read, before skipping
    int64_t impossible = 0;              // v2 questions with is_impossible
    int64_t skipped_answers = 0, skipped_questions = 0;
};

struct SquadData {
    std::string version;  // the file's "version" ("1.1", "v2.0"), empty if absent
    std::vector<SquadExample> examples;
    SquadStats stats;
};

// Throws std::runtime_error naming the file for unreadable or malformed JSON (with nlohmann's
// line and column), a missing field (naming the article or question), or a bad offset (naming
// the question id).
SquadData read_squad(const std::string& path, const SquadReadOptions& options = {});

// A split of one file into train and eval parts by article (its title), so that no context is
// seen in both. Rule: articles are ranked by mix64(seed ^ FNV-1a-64(title bytes)) (ties by
// title), and the first round(eval_fraction x articles) of that ranking are eval. It depends
// only on the titles, the seed and the fraction, not on file order, platform or standard
// library. Examples keep their file order within each part.
struct SquadSplit {
    std::vector<SquadExample> train, eval;
};
SquadSplit split_squad_by_article(const std::vector<SquadExample>& examples, double eval_fraction, uint64_t seed);

}  // namespace qdq
