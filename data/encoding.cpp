#include "data/encoding.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace qdq {
namespace {

// Lengths the two texts keep (tokenizers' truncate_encodings with stride 0, from the right);
// budget is max_length less the special tokens.
void truncated_lengths(size_t max_length, size_t budget, Truncation truncation, bool has_second, size_t& n1,
                       size_t& n2) {
    if (budget == 0) {  // tokenizers empties both texts here, whatever the strategy
        n1 = n2 = 0;
        return;
    }
    if (n1 + n2 <= budget) return;
    if (truncation == Truncation::only_second) {
        if (!has_second)
            throw std::invalid_argument("truncation only_second needs a second text (the first alone is " +
                                        std::to_string(n1) + " tokens, over the limit)");
        const size_t to_remove = n1 + n2 - budget;
        if (n2 <= to_remove)
            throw std::invalid_argument("truncation only_second cannot fit: the first text alone is " +
                                        std::to_string(n1) + " tokens of the " + std::to_string(budget) +
                                        " allowed besides special tokens");
        n2 -= to_remove;
        return;
    }
    if (!has_second) {
        n1 = budget;
        return;
    }
    // Keep a short text whole when the long one can absorb the cut; otherwise split the budget,
    // the odd token going to the longer text (the second one on a tie). tokenizers 0.23 has
    // already cut each text to max_length tokens when it compares them, so two texts that both
    // reach max_length tie (measured over all lengths up to 40 and max_length up to 33).
    const bool swapped = std::min(n1, max_length) > std::min(n2, max_length);
    size_t shorter = std::min(n1, n2), longer;
    longer = shorter > budget ? shorter : std::max(shorter, budget - shorter);
    if (shorter + longer > budget) {
        shorter = budget / 2;
        longer = shorter + budget % 2;
    }
    n1 = swapped ? longer : shorter;
    n2 = swapped ? shorter : longer;
}

void append_special(Encoding& e, int32_t id, int32_t type_id) {
    e.ids.push_back(id);
    e.token_type_ids.push_back(type_id);
    e.attention_mask.push_back(1);
    e.offsets.push_back({});
    e.byte_offsets.push_back({});
}

void append_pieces(Encoding& e, PieceRange range, int32_t type_id) {
    const WordPieces& p = *range.pieces;
    const auto begin = (std::ptrdiff_t)range.begin, end = (std::ptrdiff_t)range.end;
    e.ids.insert(e.ids.end(), p.ids.begin() + begin, p.ids.begin() + end);
    e.token_type_ids.insert(e.token_type_ids.end(), range.end - range.begin, type_id);
    e.attention_mask.insert(e.attention_mask.end(), range.end - range.begin, 1);
    e.offsets.insert(e.offsets.end(), p.offsets.begin() + begin, p.offsets.begin() + end);
    e.byte_offsets.insert(e.byte_offsets.end(), p.byte_offsets.begin() + begin, p.byte_offsets.begin() + end);
}

}  // namespace

int32_t special_token_count(const SpecialTemplate& frame, bool pair) {
    return pair ? 2 + frame.separators_between : 2;
}

int32_t second_text_begin(const SpecialTemplate& frame, size_t n1) {
    return 1 + (int32_t)n1 + frame.separators_between;
}

Encoding framed_encoding(const SpecialTemplate& frame, PieceRange first, const PieceRange* second, size_t length) {
    Encoding e;
    e.ids.reserve(length);
    e.token_type_ids.reserve(length);
    e.attention_mask.reserve(length);
    e.offsets.reserve(length);
    e.byte_offsets.reserve(length);
    append_special(e, frame.cls_id, 0);
    append_pieces(e, first, 0);
    append_special(e, frame.sep_id, 0);
    if (second) {
        for (int32_t i = 1; i < frame.separators_between; ++i) append_special(e, frame.sep_id, frame.second_type_id);
        append_pieces(e, *second, frame.second_type_id);
        append_special(e, frame.sep_id, frame.second_type_id);
    }
    const size_t padding = length > e.ids.size() ? length - e.ids.size() : 0;
    e.ids.insert(e.ids.end(), padding, frame.pad_id);
    e.token_type_ids.insert(e.token_type_ids.end(), padding, 0);
    e.attention_mask.insert(e.attention_mask.end(), padding, 0);
    e.offsets.insert(e.offsets.end(), padding, TokenSpan{});
    e.byte_offsets.insert(e.byte_offsets.end(), padding, TokenSpan{});
    return e;
}

Encoding assemble_encoding(const SpecialTemplate& frame, const WordPieces& first, const WordPieces* second,
                           const EncodeOptions& options) {
    const size_t specials = (size_t)special_token_count(frame, second != nullptr);
    size_t n1 = first.ids.size(), n2 = second ? second->ids.size() : 0;
    if (options.max_length > 0) {
        if ((size_t)options.max_length < specials)
            throw std::invalid_argument("max_length " + std::to_string(options.max_length) +
                                        " leaves no room for the " + std::to_string(specials) + " special tokens");
        truncated_lengths(options.max_length, options.max_length - specials, options.truncation, second != nullptr,
                          n1, n2);
    }
    const size_t length = std::max(n1 + n2 + specials, options.pad_to_max_length ? (size_t)options.max_length : 0);
    const PieceRange second_range{second, 0, n2};
    return framed_encoding(frame, {&first, 0, n1}, second ? &second_range : nullptr, length);
}

}  // namespace qdq
