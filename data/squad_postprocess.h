// From start/end logits per window to an answer text per SQuAD v1 example, as run_qa.py's
// postprocess_qa_predictions (version_2_with_negative off): in each window take the n_best_size
// highest start logits and the n_best_size highest end logits over all positions; pair them,
// skipping spans that leave the context, end before they start or exceed max_answer_length
// tokens; score = start logit + end logit; the best score over all windows of the example wins,
// and its text is the context between the start token's begin and the end token's end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/examples.h"
#include "data/squad_features.h"

namespace qdq {

struct SquadPostprocessOptions {
    int32_t n_best_size = 20;
    int32_t max_answer_length = 30;  // tokens
};

struct SquadPrediction {
    std::string text;       // "empty" when no window has a valid span, as run_qa.py writes then
    float score = 0;        // start + end logit, in float32 as numpy adds them
    int32_t window = -1;    // index into the windows; -1 when no span was valid
    int32_t start_token = 0, end_token = 0;  // within the window's encoding
    TokenSpan chars;        // the answer in code points of the context
};

// start_logits and end_logits are [windows.size(), seq_length] row-major, seq_length at least
// every window's length (the model's padded input length). Returns one prediction per example,
// in example order. Ties are broken towards the lower position and the earlier candidate
// (numpy's argsort leaves equal logits in an unspecified order).
std::vector<SquadPrediction> squad_predictions(const std::vector<SquadExample>& examples,
                                               const std::vector<SquadWindow>& windows,
                                               std::span<const float> start_logits, std::span<const float> end_logits,
                                               int64_t seq_length, const SquadPostprocessOptions& options = {});

}  // namespace qdq
