// AdamW's update of one element, which the CPU optimizer (optim/adamw.cpp) and the CUDA kernel
// (cuda/kernels/optimizer.cuh) both run: every intermediate is rounded to float in the order
// torch's single-tensor AdamW rounds it.
#pragma once

#include <math.h>

#include "cuda/host_device.h"

namespace qdq {

// The scalars of one parameter's update, rounded to float where torch rounds them: torch
// evaluates its Python-float hyperparameter arithmetic in double and hands the result to a
// float32 kernel (optim/adamw.cpp computes them).
struct AdamWScalars {
    float decay;  // 1 − lr·wd
    float beta1, one_minus_beta1;
    float beta2, one_minus_beta2;
    float bias_correction2_sqrt;
    float neg_step_size;  // −lr / (1 − β1ᵗ)
    float eps;
};

QDQ_HOST_DEVICE void adamw_element(float& param, float& exp_avg, float& exp_avg_sq, float grad, const AdamWScalars& s) {
    const float p = param * s.decay;
    const float m = exp_avg * s.beta1 + s.one_minus_beta1 * grad;
    const float v = exp_avg_sq * s.beta2 + s.one_minus_beta2 * grad * grad;
    const float denom = sqrtf(v) / s.bias_correction2_sqrt + s.eps;
    param = p + s.neg_step_size * m / denom;
    exp_avg = m;
    exp_avg_sq = v;
}

}  // namespace qdq
