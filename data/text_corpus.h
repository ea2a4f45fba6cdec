// Pretraining text for masked-LM: documents read from corpus files, tokenized and packed into
// fixed-length model inputs.
//
// Files (plain or gzip, see text_file.h):
// - JSONL (*.jsonl[.gz]): one JSON object per line, the document in its "text" string (other keys,
//   such as IMDB's "id" or Wikipedia's "title", are ignored). Blank lines are skipped.
// - Plain text (*.txt[.gz]): documents separated by blank (empty or whitespace-only) lines; a
//   document's lines are joined with '\n' and a CRLF end loses its '\r'.
//
// Packing is BERT/RoBERTa-style full-sentence packing, concatenate-then-cut as Hugging Face
// run_mlm.py's group_texts does it: every document is tokenized without special tokens, the
// documents are concatenated into one stream with [SEP] between neighbours (across files too),
// and the stream is cut into chunks of max_seq_length - 2 tokens, each wrapped as
// "[CLS] chunk [SEP]" (token type 0, attention mask 1; RoBERTa's <s> and </s> stand for [CLS] and
// [SEP]). Sequences thus cross document boundaries, no token is wasted on padding except in the
// last sequence, and every position trains. Differences: RoBERTa's FULL-SENTENCES ends a
// sequence at a sentence boundary, where we cut anywhere, as group_texts does; group_texts keeps
// each text's own [CLS]/[SEP] inside its chunks and adds none around them, and drops the short
// remainder, which we keep so that a small corpus still gives a sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer.h"

namespace qdq {

// Calls visit(text) for each non-empty document of `path` in file order, until visit returns
// false. Throws std::runtime_error naming "file:line" for bad JSON, a line that is not an object,
// a missing or non-string "text" and invalid UTF-8, and naming the file for an extension other
// than those above.
void read_documents(const std::string& path, const std::function<bool(std::string_view text)>& visit);

// As read_documents, for a file named with a slice of its documents ("wiki.jsonl.gz[:98%]",
// data/document_slice.h): only the documents in the slice are visited. A percentage slice
// reads the file twice, once to count its documents.
void read_document_slice(const std::string& spec, const std::function<bool(std::string_view text)>& visit);

// The packed sequences, stored flat: ~40M tokens as std::vector<Encoding> would cost three
// vectors per sequence; this is 4 bytes per token.
struct PackedSequences {
    std::vector<int32_t> tokens;  // every sequence back to back, its [CLS] and [SEP] included
    std::vector<int64_t> starts{0};  // [count + 1]: sequence i is tokens[starts[i], starts[i + 1])
};

int64_t sequence_count(const PackedSequences& packed);
int32_t sequence_length(const PackedSequences& packed, int64_t i);
// Sequence i as the loader's collate() takes it: ids, token types 0, mask 1, no offsets.
Encoding sequence_encoding(const PackedSequences& packed, int64_t i);

// The documents of `files` (each may name a slice, as read_document_slice), in order, packed as above. max_sequences >= 0 stops reading once
// that many full sequences are packed (-1: the whole corpus). Throws std::invalid_argument for
// max_seq_length < 3 (no room for a token) and the reader's errors.
PackedSequences pack_documents(const std::vector<std::string>& files, const Tokenizer& tokenizer,
                               int32_t max_seq_length, int64_t max_sequences = -1);

}  // namespace qdq
