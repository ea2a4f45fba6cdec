#include "data/squad_features.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "data/python_text.h"

namespace qdq {
namespace {

struct WindowScratch {
    NormalizedText normalized;
    WordPieces question, context;
};
thread_local WindowScratch window_scratch;

// The tokens of one window of the context: [begin, end) of its word pieces.
Encoding window_encoding(const WordPieceTokenizer& tokenizer, const WordPieces& question, const WordPieces& context,
                         size_t begin, size_t end, const SquadFeatureOptions& options) {
    const size_t used = question.ids.size() + (end - begin) + 3;
    const size_t length = options.pad_to_max_length ? std::max(used, (size_t)options.max_seq_length) : used;
    Encoding e;
    e.ids.reserve(length);
    e.ids.push_back(tokenizer.cls_id);
    e.ids.insert(e.ids.end(), question.ids.begin(), question.ids.end());
    e.ids.push_back(tokenizer.sep_id);
    e.ids.insert(e.ids.end(), context.ids.begin() + begin, context.ids.begin() + end);
    e.ids.push_back(tokenizer.sep_id);
    e.ids.resize(length, tokenizer.pad_id);

    const size_t context_begin = question.ids.size() + 2;
    e.token_type_ids.assign(length, 0);
    std::fill(e.token_type_ids.begin() + context_begin, e.token_type_ids.begin() + used, 1);
    e.attention_mask.assign(length, 0);
    std::fill(e.attention_mask.begin(), e.attention_mask.begin() + used, 1);
    e.offsets.assign(length, TokenSpan{});
    std::copy(context.offsets.begin() + begin, context.offsets.begin() + end, e.offsets.begin() + context_begin);
    e.byte_offsets.assign(length, TokenSpan{});
    std::copy(context.byte_offsets.begin() + begin, context.byte_offsets.begin() + end,
              e.byte_offsets.begin() + context_begin);
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

void append_squad_windows(const WordPieceTokenizer& tokenizer, const SquadExample& example, int32_t example_index,
                          const SquadFeatureOptions& options, std::vector<SquadWindow>& out) {
    if (options.max_seq_length <= 3 || options.doc_stride < 0)
        throw std::invalid_argument("SQuAD windows need max_seq_length > 3 and doc_stride >= 0, not " +
                                    std::to_string(options.max_seq_length) + " and " +
                                    std::to_string(options.doc_stride));
    WindowScratch& s = window_scratch;
    tokenize(tokenizer, python_text::lstrip(example.question), s.normalized, s.question);
    tokenize(tokenizer, example.context, s.normalized, s.context);
    const size_t n_question = s.question.ids.size(), n_context = s.context.ids.size();
    const size_t budget = (size_t)options.max_seq_length - 3;
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
        w.context_begin = (int32_t)n_question + 2;
        w.context_end = w.context_begin + (int32_t)(end - begin);
        label_window(example, w);
        out.push_back(std::move(w));
        if (end == n_context) break;
    }
}

std::vector<SquadWindow> squad_windows(const WordPieceTokenizer& tokenizer, const std::vector<SquadExample>& examples,
                                       const SquadFeatureOptions& options) {
    std::vector<SquadWindow> out;
    out.reserve(examples.size());
    for (size_t i = 0; i < examples.size(); ++i) append_squad_windows(tokenizer, examples[i], (int32_t)i, options, out);
    return out;
}

}  // namespace qdq
