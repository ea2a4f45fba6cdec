#include "data/document_slice.h"

#include <cmath>
#include <stdexcept>

namespace qdq {
namespace {

std::optional<SliceBound> parse_bound(const std::string& text, const std::string& spec) {
    if (text.empty()) return std::nullopt;
    SliceBound bound;
    std::string number = text;
    if (number.back() == '%') {
        bound.percent = true;
        number.pop_back();
    }
    size_t used = 0;
    try {
        bound.value = std::stod(number, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    const bool whole = bound.percent || bound.value == std::floor(bound.value);
    if (number.empty() || used != number.size() || !std::isfinite(bound.value) || !whole)
        throw std::invalid_argument(spec + ": slice bound '" + text +
                                    "' is neither a document index nor a percentage");
    if (bound.value < 0) throw std::invalid_argument(spec + ": slice bound '" + text + "' is negative");
    if (bound.percent && bound.value > 100) throw std::invalid_argument(spec + ": slice bound '" + text + "' is over 100%");
    return bound;
}

int64_t index_of(const SliceBound& bound, int64_t count) {
    if (!bound.percent) return (int64_t)bound.value;
    return std::llround(bound.value * (double)count / 100.0);
}

}  // namespace

DocumentSlice parse_document_slice(const std::string& spec) {
    DocumentSlice slice;
    slice.path = spec;
    if (!spec.ends_with(']')) return slice;
    const size_t open = spec.rfind('[');
    if (open == std::string::npos || open == 0)
        throw std::invalid_argument(spec + ": a slice is written file[begin:end]");
    const std::string inside = spec.substr(open + 1, spec.size() - open - 2);
    const size_t colon = inside.find(':');
    if (colon == std::string::npos || inside.find(':', colon + 1) != std::string::npos)
        throw std::invalid_argument(spec + ": a slice is written file[begin:end], with one colon");
    slice.path = spec.substr(0, open);
    slice.begin = parse_bound(inside.substr(0, colon), spec);
    slice.end = parse_bound(inside.substr(colon + 1), spec);
    return slice;
}

DocumentRange document_range(const DocumentSlice& slice, int64_t count) {
    if (slice.needs_count() && count < 0)
        throw std::logic_error(slice.path + ": a percentage slice needs the file's document count");
    DocumentRange range;
    if (slice.begin) range.begin = index_of(*slice.begin, count);
    if (slice.end) range.end = index_of(*slice.end, count);
    return range;
}

}  // namespace qdq
