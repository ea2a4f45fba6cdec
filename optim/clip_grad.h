// Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_ (norm_type 2).
#pragma once

#include <vector>

#include "autograd/tensor.h"
#include "optim/param_groups.h"

namespace qdq {

// norm = ‖all gradients as one vector‖₂, accumulated in double; when
// scale = max_norm / (norm + 1e-6) is below 1 every gradient is multiplied by it. Returns the
// norm before clipping (0 when no parameter has a gradient; parameters without one are
// skipped). A non-finite norm is returned as it is, for the caller to act on.
double clip_grad_norm(const std::vector<Tensor>& params, double max_norm);
double clip_grad_norm(const std::vector<ParamGroup>& groups, double max_norm);

}  // namespace qdq
