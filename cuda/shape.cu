// The data-movement kernels' entry points (cuda/kernels/shape.cuh) over device pointers.
#include <stdexcept>

#include "cuda/backend.h"
#include "cuda/kernels/shape.cuh"

namespace qdq::cuda {

void permute_copy(float* y, const float* x, const int64_t* out_shape, const int64_t* src_strides, int dims,
                  bool accumulate) {
    if (dims > kMaxPermuteDims) throw std::invalid_argument("permute_copy: at most 6 dims");
    PermuteCopyOp op{y, x, dims, {}, {}, accumulate};
    int64_t n = 1;
    for (int d = 0; d < dims; ++d) {
        op.out_shape[d] = out_shape[d];
        op.src_strides[d] = src_strides[d];
        n *= out_shape[d];
    }
    for_each(n, op);
}

void axis_block_copy(float* dst, int64_t dst_n, int64_t dst_start, const float* src, int64_t src_n, int64_t src_start,
                     int64_t len, int64_t outer, int64_t inner, bool accumulate) {
    for_each(outer * len * inner, AxisBlockOp{dst, src, dst_n, dst_start, src_n, src_start, len, inner, accumulate});
}

void to_bf16(uint16_t* out, const float* x, int64_t n) { for_each(n, ToBf16Op{out, x}); }

}  // namespace qdq::cuda
