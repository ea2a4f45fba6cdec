// Axis helpers shared by the ops that work along one axis (reductions, slice, concat).
#pragma once

#include <string>

#include "autograd/tensor.h"

namespace qdq {

// A tensor seen as [outer, n, inner] around `axis`: the loops of every along-one-axis kernel.
struct AxisSplit {
    int64_t outer, n, inner;
};

inline AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
    AxisSplit s{1, shape[(size_t)axis], 1};
    for (int64_t d = 0; d < axis; ++d) s.outer *= shape[(size_t)d];
    for (size_t d = (size_t)axis + 1; d < shape.size(); ++d) s.inner *= shape[d];
    return s;
}

// `axis` counted from the end when negative; out of range is an error naming the op.
inline int64_t normalize_axis(const char* op, int64_t axis, const Shape& shape) {
    int64_t n = (int64_t)shape.size();
    check(axis >= -n && axis < n, std::string(op) + ": axis " + std::to_string(axis) +
                                      " out of range for shape " + shape_str(shape));
    return axis < 0 ? axis + n : axis;
}

}  // namespace qdq
