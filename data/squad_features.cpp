#include "data/squad_features.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "data/parallel_examples.h"
#include "data/python_text.h"

namespace qdq {
namespace {

struct WindowScratch {
    TokenizeScratch tokenize;
    WordPieces question, context;
};
thread_local WindowScratch window_scratch;

// The tokens of one window of the context: [begin, end) of its tokens. Offsets are kept for the
// context's tokens only, as prepare_validation_features keeps them.
Encoding window_encoding(const Tokenizer& tokenizer, const WordPieces& question, const WordPieces& context,
                         size_t begin, size_t end, const SquadFeatureOptions& options) {
    const size_t used = question.ids.size() + (end - begin) + (size_t)special_token_count(tokenizer.special, true);
    const size_t length = options.pad_to_max_length ? std::max(used, (size_t)options.max_seq_length) : used;
    const PieceRange context_range{&context, begin, end};
    Encoding e = framed_encoding(tokenizer.special, {&question, 0, question.ids.size()}, &context_range, length);
    const auto context_begin = (std::ptrdiff_t)second_text_begin(tokenizer.special, question.ids.size());
    std::fill(e.offsets.begin(), e.offsets.begin() + context_begin, TokenSpan{});
    std::fill(e.byte_offsets.begin(), e.byte_offsets.begin() + context_begin, TokenSpan{});
    return e;
}

// prepare_train_features' labels, in code points as run_qa.py's answer_start. Where run_qa.py
// scans for the start token it can run past the last context token (into [SEP] and padding,
// whose offsets (0, 0) also satisfy "begin <= start_char"): an answer that starts in a window's
// last context token gets the last position of the sequence there. Here it gets that token.
void label_window(const SquadExample& example, SquadWindow& w) {
    w.start_position = w.end_position = 0;
    if (example.answers.empty()) return;
    const SquadAnswer& answer = example.answers.front();
    const int64_t start_char = answer.answer_start;
    const int64_t end_char = start_char + (int64_t)python_text::decode(answer.text).size();
    const std::vector<TokenSpan>& offsets = w.encoding.offsets;
    if (w.context_begin == w.context_end) return;
    if (offsets[w.context_begin].begin > start_char || offsets[w.context_end - 1].end < end_char) return;
    int32_t start = w.context_begin;
    while (start + 1 < w.context_end && offsets[start + 1].begin <= start_char) ++start;
    int32_t end = w.context_end - 1;
    while (end >= w.context_begin && offsets[end].end >= end_char) --end;
    w.start_position = start;
    w.end_position = end + 1;
}

}  // namespace

void append_squad_windows(const Tokenizer& tokenizer, const SquadExample& example, int32_t example_index,
                          const SquadFeatureOptions& options, std::vector<SquadWindow>& out) {
    const int32_t specials = special_token_count(tokenizer.special, true);
    if (options.max_seq_length <= specials || options.doc_stride < 0)
        throw std::invalid_argument("SQuAD windows need max_seq_length > " + std::to_string(specials) +
                                    " and doc_stride >= 0, not " + std::to_string(options.max_seq_length) + " and " +
                                    std::to_string(options.doc_stride));
    WindowScratch& s = window_scratch;
    tokenize(tokenizer, python_text::lstrip(example.question), s.tokenize, s.question);
    tokenize(tokenizer, example.context, s.tokenize, s.context);
    const size_t n_question = s.question.ids.size(), n_context = s.context.ids.size();
    const size_t budget = (size_t)(options.max_seq_length - specials);
    size_t width = n_context;  // context tokens per window
    if (n_question + n_context > budget) {
        if (n_question >= budget)
            throw std::invalid_argument("SQuAD question " + example.id + " has " + std::to_string(n_question) +
                                        " tokens: no room for the context in " +
                                        std::to_string(options.max_seq_length));
        width = budget - n_question;
        if ((size_t)options.doc_stride >= width)
            throw std::invalid_argument("SQuAD question " + example.id + " leaves " + std::to_string(width) +
                                        " context tokens per window, not more than doc_stride " +
                                        std::to_string(options.doc_stride));
    }
    const size_t step = width - (width < n_context ? (size_t)options.doc_stride : 0);
    for (size_t begin = 0;; begin += step) {
        const size_t end = std::min(begin + width, n_context);
        SquadWindow w;
        w.example_index = example_index;
        w.encoding = window_encoding(tokenizer, s.question, s.context, begin, end, options);
        w.context_begin = second_text_begin(tokenizer.special, n_question);
        w.context_end = w.context_begin + (int32_t)(end - begin);
        label_window(example, w);
        out.push_back(std::move(w));
        if (end == n_context) break;
    }
}

std::vector<SquadWindow> squad_windows(const Tokenizer& tokenizer, const std::vector<SquadExample>& examples,
                                       const SquadFeatureOptions& options) {
    return features_in_parallel<SquadWindow>((int64_t)examples.size(), [&](int64_t i, std::vector<SquadWindow>& out) {
        append_squad_windows(tokenizer, examples[(size_t)i], (int32_t)i, options, out);
    });
}

}  // namespace qdq
