// SQuAD examples as model inputs, the way Hugging Face's run_qa.py prepares them with a fast
// tokenizer (prepare_train_features / prepare_validation_features): "[CLS] question [SEP]
// context [SEP]" (RoBERTa: "<s> question </s></s> context </s>") with the question left-stripped
// (question.lstrip()), truncation only_second at max_seq_length, and a context too long for one
// input split into windows that overlap by doc_stride tokens, as tokenizers'
// return_overflowing_tokens does.
//
// The lstrip changes no WordPiece token (BERT drops or splits on every character Python strips),
// only the question's offsets, which are not kept; byte-level BPE would keep a leading space in
// the question's first token.
//
// Window starts (tokenizers' Encoding::truncate, direction right): with n context tokens and
// room for w = max_seq_length - (3 or 4 special tokens) - question tokens, the windows are
// [s, min(s + w, n)) for s = 0, w - stride, 2(w - stride), ... up to the first window that
// reaches n.
#pragma once

#include <cstdint>
#include <vector>

#include "data/examples.h"
#include "data/tokenizer.h"

namespace qdq {

struct SquadFeatureOptions {
    int32_t max_seq_length = 384;
    int32_t doc_stride = 128;  // tokens shared by consecutive windows of a context
    bool pad_to_max_length = true;
};

// One model input. Its encoding's offsets and byte_offsets locate context tokens in the
// example's context (code points and UTF-8 bytes); every other token has (0, 0), as
// prepare_validation_features keeps offsets for context tokens only.
struct SquadWindow {
    int32_t example_index = 0;  // into the examples the windows were made from
    Encoding encoding;
    int32_t context_begin = 0, context_end = 0;  // the context tokens: [context_begin, context_end)
    // Training labels: the first gold answer's first and last token, or both 0 ([CLS]) when the
    // window does not hold the whole answer or the example has none. As run_qa.py: the last
    // context token that begins at or before the answer's first character, and the first that
    // ends at or after its end, so an answer that cuts a word gets the whole token. One
    // difference: for an answer that starts in the window's last context token run_qa.py's scan
    // overshoots to the sequence's last position ([SEP] or padding); this labels the token.
    int32_t start_position = 0, end_position = 0;
};

// Appends the windows of one example to out. Throws std::invalid_argument where run_qa.py's
// tokenizer fails too: when the question leaves no room for the context, or no more room than
// doc_stride, and the context does not fit as a whole.
void append_squad_windows(const Tokenizer& tokenizer, const SquadExample& example, int32_t example_index,
                          const SquadFeatureOptions& options, std::vector<SquadWindow>& out);

// The windows of every example, in example order, made on every core (data/parallel_examples.h).
std::vector<SquadWindow> squad_windows(const Tokenizer& tokenizer, const std::vector<SquadExample>& examples,
                                       const SquadFeatureOptions& options);

}  // namespace qdq
