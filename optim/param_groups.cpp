#include "optim/param_groups.h"

namespace qdq {

bool excluded_from_weight_decay(const std::string& name) {
    return name.ends_with(".bias") || name.ends_with("LayerNorm.weight");
}

std::vector<ParamGroup> weight_decay_groups(const NamedTensors& params, double weight_decay) {
    std::vector<ParamGroup> groups = {{{}, weight_decay}, {{}, 0.0}};
    for (const NamedTensor& p : params) {
        if (!p.tensor.requires_grad()) continue;
        groups[excluded_from_weight_decay(p.name) ? 1 : 0].params.push_back(p);
    }
    return groups;
}

}  // namespace qdq
