// SGD as torch.optim.SGD with dampening 0 (maximize off):
//   d ← g + wd·p;   b ← μ·b + d;   d ← d + μ·b (nesterov) or b;   p ← p − lr·d.
// A parameter without a gradient is skipped and its buffer left as it is, as in torch.
#pragma once

#include <vector>

#include "autograd/named_tensors.h"
#include "optim/param_groups.h"

namespace qdq {

struct SgdOptions {
    double momentum = 0;
    bool nesterov = false;  // needs momentum > 0, as in torch
};

struct Sgd {
    std::vector<ParamGroup> groups;
    SgdOptions options;
    // With momentum, one "<name>.momentum_buffer" per parameter in group order (torch's key),
    // float32 of the parameter's shape; empty without momentum. Zero-initialised: torch's first
    // step sets b = d, which is what μ·0 + d gives, so the buffers need no "first step" flag.
    NamedTensors state;
};

Sgd make_sgd(std::vector<ParamGroup> groups, const SgdOptions& options = {});

// One update of every parameter that has a gradient. Allocates nothing.
void sgd_step(Sgd& opt, double lr);

}  // namespace qdq
