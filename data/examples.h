// The examples the task readers produce and the feature builders consume.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qdq {

// A classification example: NLI pairs (premise, hypothesis), or a single text (IMDB, SST-2)
// with text_b empty. Labels are class indices (NLI: 0 entailment, 1 neutral, 2 contradiction,
// as GLUE orders them; sentiment: 0 negative, 1 positive).
struct TextExample {
    std::string id;  // the source's id, or "<file>:<line>" where it has none
    std::string text_a;
    std::string text_b;
    int32_t label = -1;
};

struct SquadAnswer {
    std::string text;
    int64_t answer_start = 0;  // in code points of the context (Python str indices), as SQuAD
};

struct SquadExample {
    std::string id;
    std::string title;  // the article; splits into train and eval parts go by article
    std::string context;
    std::string question;
    std::vector<SquadAnswer> answers;  // all gold answers (dev sets have several)
    bool is_impossible = false;         // SQuAD v2 only
};

}  // namespace qdq
