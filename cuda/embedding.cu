// The embedding's entry points (cuda/kernels/embedding.cuh) over device pointers.
#include "cuda/backend.h"
#include "cuda/kernels/embedding.cuh"

namespace qdq::cuda {

void embedding_forward(float* out, const float* weight, const int32_t* ids, int64_t n, int64_t C) {
    for_each(n * C, EmbeddingForwardOp{out, weight, ids, C});
}
void embedding_backward(float* dweight, const float* dout, const int32_t* ids, int64_t n, int64_t C,
                        int64_t padding_idx) {
    for_each(n * C, EmbeddingBackwardOp{dweight, dout, ids, C, padding_idx});
}

}  // namespace qdq::cuda
