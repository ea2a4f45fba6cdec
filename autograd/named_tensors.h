// Weights as an ordered list of (Hugging Face state_dict key, tensor), the currency of every
// weights format in io/. A vector rather than a map: file order survives a round trip and
// duplicate keys are an error the writers report instead of a silent overwrite.
#pragma once

#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace qdq {

struct NamedTensor {
    std::string name;  // e.g. "bert.encoder.layer.0.attention.self.query.weight"
    Tensor tensor;
};

using NamedTensors = std::vector<NamedTensor>;

}  // namespace qdq
