#include "data/squad_postprocess.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace qdq {
namespace {

// Positions of the n highest logits, highest first.
std::vector<int32_t> top_positions(std::span<const float> logits, int32_t n) {
    std::vector<int32_t> positions(logits.size());
    std::iota(positions.begin(), positions.end(), 0);
    const size_t keep = std::min(positions.size(), (size_t)std::max(n, 0));
    std::partial_sort(positions.begin(), positions.begin() + keep, positions.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    positions.resize(keep);
    return positions;
}

void consider_window(const SquadWindow& w, int32_t window_index, std::span<const float> start_logits,
                     std::span<const float> end_logits, const SquadPostprocessOptions& options,
                     SquadPrediction& best) {
    const std::vector<int32_t> starts = top_positions(start_logits, options.n_best_size);
    const std::vector<int32_t> ends = top_positions(end_logits, options.n_best_size);
    const auto in_context = [&](int32_t t) { return t >= w.context_begin && t < w.context_end; };
    for (int32_t s : starts) {
        for (int32_t e : ends) {
            if (!in_context(s) || !in_context(e) || e < s || e - s + 1 > options.max_answer_length) continue;
            const float score = start_logits[s] + end_logits[e];
            // Strictly greater: among equal scores the first candidate stays, as Python's stable
            // sorted(..., reverse=True) keeps it first.
            if (best.window >= 0 && !(score > best.score)) continue;
            best.score = score;
            best.window = window_index;
            best.start_token = s;
            best.end_token = e;
        }
    }
}

}  // namespace

std::vector<SquadPrediction> squad_predictions(const std::vector<SquadExample>& examples,
                                               const std::vector<SquadWindow>& windows,
                                               std::span<const float> start_logits, std::span<const float> end_logits,
                                               int64_t seq_length, const SquadPostprocessOptions& options) {
    const size_t expected = windows.size() * (size_t)std::max<int64_t>(seq_length, 0);
    if (start_logits.size() != expected || end_logits.size() != expected)
        throw std::invalid_argument("squad_predictions: " + std::to_string(windows.size()) + " windows of " +
                                    std::to_string(seq_length) + " positions need " + std::to_string(expected) +
                                    " logits each, got " + std::to_string(start_logits.size()) + " start and " +
                                    std::to_string(end_logits.size()) + " end");
    std::vector<SquadPrediction> predictions(examples.size());
    for (size_t i = 0; i < windows.size(); ++i) {
        const SquadWindow& w = windows[i];
        if (w.example_index < 0 || (size_t)w.example_index >= examples.size())
            throw std::invalid_argument("squad_predictions: window " + std::to_string(i) + " names example " +
                                        std::to_string(w.example_index) + " of " + std::to_string(examples.size()));
        if ((int64_t)w.encoding.ids.size() > seq_length)
            throw std::invalid_argument("squad_predictions: window " + std::to_string(i) + " has " +
                                        std::to_string(w.encoding.ids.size()) + " tokens, more than seq_length " +
                                        std::to_string(seq_length));
        consider_window(w, (int32_t)i, start_logits.subspan(i * seq_length, seq_length),
                        end_logits.subspan(i * seq_length, seq_length), options, predictions[w.example_index]);
    }
    for (size_t e = 0; e < examples.size(); ++e) {
        SquadPrediction& p = predictions[e];
        if (p.window < 0) {
            p.text = "empty";
            continue;
        }
        const Encoding& encoding = windows[p.window].encoding;
        const TokenSpan first = encoding.byte_offsets[p.start_token], last = encoding.byte_offsets[p.end_token];
        p.text = examples[e].context.substr(first.begin, last.end - first.begin);
        p.chars = {encoding.offsets[p.start_token].begin, encoding.offsets[p.end_token].end};
    }
    return predictions;
}

}  // namespace qdq
