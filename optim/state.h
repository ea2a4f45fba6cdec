// Optimizer state as named tensors, and the checks every optimizer makes on its parameters.
// State entries are "<parameter name>.<torch state key>" (e.g. "bert.pooler.dense.bias.exp_avg"),
// so a checkpoint writes an optimizer's state exactly as it writes a model's weights.
#pragma once

#include <string>
#include <vector>

#include "autograd/named_tensors.h"
#include "optim/param_groups.h"

namespace qdq {

// Copies `saved` into `state` entry by entry, by name. Errors name the entry: a missing or
// unknown entry, a shape or a dtype that differs. `state` keeps its own buffers, so nothing
// aliases the loaded tensors and the optimizer's layout cannot be changed by a load.
void load_state(NamedTensors& state, const NamedTensors& saved, const std::string& who);

// Checks that parameter names are unique across groups (state is keyed by them) and that every
// parameter is a float32 CPU tensor, the kernels here being CPU kernels.
void check_params(const std::vector<ParamGroup>& groups, const std::string& who);

// The gradient of a parameter, undefined when it has none; checked to be float32, on the CPU
// and of the parameter's shape.
Tensor param_gradient(const NamedTensor& param, const char* who);

}  // namespace qdq
