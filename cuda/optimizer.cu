// AdamW's entry point (cuda/kernels/optimizer.cuh) over device pointers.
#include "cuda/backend.h"
#include "cuda/kernels/optimizer.cuh"

namespace qdq::cuda {

void adamw_update(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, int64_t n, const AdamWScalars& s) {
    for_each(n, AdamWOp{param, exp_avg, exp_avg_sq, grad, s});
}

}  // namespace qdq::cuda
