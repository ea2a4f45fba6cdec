// A corpus file named with a slice of its documents, in the syntax Hugging Face datasets uses
// to slice a split ("train[:98%]"): "wiki.jsonl.gz[:98%]" is the first 98% of the file's
// documents, "wiki.jsonl.gz[98%:]" the rest, "wiki.jsonl.gz[100:200]" documents 100 to 199.
// This is how one corpus file gives both a training part and a held-out part that training
// never reads.
//
// Bounds are document indices (counted over the documents read_documents visits, so blank
// lines and empty texts do not count) or percentages of the file's documents, rounded to the
// nearest document as datasets' default "closest" rounding does; either side may be left out;
// both are non-negative. An end past the last document stops at it; a begin at or past the end
// gives no documents.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace qdq {

struct SliceBound {
    double value = 0;
    bool percent = false;
};

struct DocumentSlice {
    std::string path;  // the file, without the slice
    std::optional<SliceBound> begin, end;
    bool whole_file() const { return !begin && !end; }
    bool needs_count() const { return (begin && begin->percent) || (end && end->percent); }
};

// "path" or "path[begin:end]". Throws std::invalid_argument naming `spec` for a malformed slice
// (no colon, a bound that is not a number or a percentage, a negative bound, over 100%).
DocumentSlice parse_document_slice(const std::string& spec);

struct DocumentRange {
    int64_t begin = 0, end = INT64_MAX;  // [begin, end)
};

// The range of document indices `slice` selects in a file of `count` documents (count may be
// unknown, -1, when no bound is a percentage).
DocumentRange document_range(const DocumentSlice& slice, int64_t count);

}  // namespace qdq
