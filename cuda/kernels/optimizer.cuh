// AdamW on the device: the CPU optimizer's element update (cuda/optimizer_math.h) over a
// parameter and its moments, one element per thread of a grid-stride loop.
#pragma once

#include <cstdint>

#include "cuda/kernels/for_each.cuh"
#include "cuda/optimizer_math.h"

namespace qdq::cuda {

struct AdamWOp {
    float* param;
    float* exp_avg;
    float* exp_avg_sq;
    const float* grad;
    AdamWScalars s;
    __host__ __device__ void operator()(int64_t i) const { adamw_element(param[i], exp_avg[i], exp_avg_sq[i], grad[i], s); }
};

}  // namespace qdq::cuda
