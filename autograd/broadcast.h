// Numpy broadcasting: shapes align on the right; a dim of 1 (or a missing one) repeats.
#pragma once

#include <vector>

#include "autograd/tensor.h"

namespace qdq {

Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws naming both shapes

// Maps each flat index of `out_shape` to the flat index of an input of shape `in_shape`
// broadcast to it. An odometer walks the output, so no division per element.
struct BroadcastMap {
    Shape out_shape;
    std::vector<int64_t> in_strides;  // per output axis; 0 where the input repeats

    BroadcastMap(const Shape& in_shape, const Shape& out_shape);
    // Fills offsets[i] = input index of output element (begin + i), i < end - begin.
    void offsets(int64_t begin, int64_t end, int64_t* offsets) const;
    int64_t offset(int64_t out_index) const;
};

// Sums `grad` (of the broadcast shape) down to `shape` and adds it into `dst` (of `shape`):
// the backward of broadcasting.
void reduce_broadcast_add(const Tensor& dst, const Tensor& grad);

}  // namespace qdq
