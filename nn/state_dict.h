// Loading named tensors into a model the way Hugging Face's from_pretrained does: keys with or
// without the "bert." prefix, TF-era LayerNorm names (gamma/beta), the tied MLM decoder keys,
// and a report of missing and unexpected keys. A shape mismatch is an error naming the key.
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"

namespace qdq::nn {

struct LoadReport {
    std::vector<std::string> missing;     // model keys the file lacks (left as initialised)
    std::vector<std::string> unexpected;  // file keys the model does not have (ignored)
    std::string summary() const;          // HF-style lines, empty when both lists are empty
};

// Copies each matching tensor's data into the model's parameter or buffer (converting int32
// only where the model holds int32). `source` names the file in error messages.
LoadReport load_state_dict(Module& model, const NamedTensors& tensors, const std::string& source);

}  // namespace qdq::nn
