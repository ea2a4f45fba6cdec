// AdamW as torch.optim.AdamW (amsgrad off, maximize off): decoupled weight decay
// p ← p·(1 − lr·wd) first, then the Adam update with bias correction,
//   m ← β1·m + (1 − β1)·g,   v ← β2·v + (1 − β2)·g²,
//   p ← p − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + eps),
// where t counts the steps this parameter took. A parameter without a gradient is skipped
// and its t does not advance, as in torch.
#pragma once

#include <vector>

#include "autograd/named_tensors.h"
#include "cuda/optimizer_math.h"
#include "optim/param_groups.h"

namespace qdq {

// Hugging Face TrainingArguments defaults (adam_beta1, adam_beta2, adam_epsilon).
struct AdamWOptions {
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
};

struct AdamW {
    std::vector<ParamGroup> groups;
    AdamWOptions options;
    // Three entries per parameter, in group order, under torch's state keys:
    //   "<name>.exp_avg", "<name>.exp_avg_sq"  float32, the parameter's shape
    //   "<name>.step"                          int32 [], steps taken with a gradient
    // Saving is writing these tensors; restoring is load_state(opt.state, saved, ...).
    // Zero-initialised up front: zero moments at t = 0 are what torch's lazily created state
    // holds, and the layout then never changes.
    NamedTensors state;
};

AdamW make_adamw(std::vector<ParamGroup> groups, const AdamWOptions& options = {});

// The float scalars of the update at step t (1-based) of a parameter, as adamw_step hands them to
// adamw_element (cuda/optimizer_math.h), which the GPU kernel runs too.
AdamWScalars adamw_scalars(const AdamWOptions& options, double lr, double weight_decay, int64_t t);

// One update of every parameter that has a gradient, at learning rate `lr` (the schedule's
// value for this step). Allocates no tensor: the moments were made with the parameters.
void adamw_step(AdamW& opt, double lr);

}  // namespace qdq
