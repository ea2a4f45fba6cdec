// Walking a tensor seen as [outer, C, inner] around a per-channel axis (C = 1 per tensor) as
// contiguous single-channel runs: the loop structure of every per-channel kernel in quant/.
#pragma once

#include <algorithm>
#include <optional>

#include "autograd/ops/axis.h"

namespace qdq {

inline AxisSplit channel_split(const Shape& shape, const std::optional<int64_t>& axis,
                               const char* op) {
    if (!axis) return AxisSplit{1, 1, shape_numel(shape)};
    return split_at_axis(shape, normalize_axis(op, *axis, shape));
}

// Calls run(begin, length, channel) for the runs covering elements [begin, end), in order.
// A split with a small inner size (axis = last) makes many short runs: fine for weights, and
// PQ quantizes no activation per channel.
template <typename Run>
void for_each_channel_run(const AxisSplit& split, int64_t begin, int64_t end, Run&& run) {
    for (int64_t i = begin; i < end;) {
        int64_t row = i / split.inner;
        int64_t run_end = std::min(end, (row + 1) * split.inner);
        run(i, run_end - i, row % split.n);
        i = run_end;
    }
}

}  // namespace qdq
