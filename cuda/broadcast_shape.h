// How a binary op broadcasts, as the device's kernels take it (cuda/kernels/broadcast.cuh): the
// output's shape and each input's strides over it, 0 along the dims where the input repeats.
#pragma once

#include <cstdint>

namespace qdq::cuda {

constexpr int kMaxBroadcastDims = 6;
enum BinaryKind : int { kBinaryAdd = 0, kBinarySub = 1, kBinaryMul = 2, kBinaryDiv = 3 };

struct BroadcastShape {
    int dims;
    int64_t out[kMaxBroadcastDims], a_strides[kMaxBroadcastDims], b_strides[kMaxBroadcastDims];
};

}  // namespace qdq::cuda
