// Parameter groups as in torch.optim: parameters that share hyperparameters, and Hugging
// Face Trainer's split of a model's parameters into a weight-decay and a no-decay group.
#pragma once

#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "autograd/named_tensors.h"

namespace qdq {

// Parameters keep their state_dict names so that optimizer state is saved under them: a
// checkpoint then does not depend on how the parameters were grouped or ordered.
struct ParamGroup {
    NamedTensors params;
    double weight_decay = 0;
};

// Hugging Face Trainer: biases and LayerNorm weights are not decayed ("*.bias",
// "*LayerNorm.weight"; "*LayerNorm.bias" is a bias).
bool excluded_from_weight_decay(const std::string& name);

// {decay group with `weight_decay`, no-decay group with 0}, both always present and in the
// order of `params`. Parameters that do not require a gradient (frozen) are left out, as HF does.
std::vector<ParamGroup> weight_decay_groups(const NamedTensors& params, double weight_decay);

}  // namespace qdq
