#include "optim/state.h"

#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace qdq {

void load_state(NamedTensors& state, const NamedTensors& saved, const std::string& who) {
    std::unordered_map<std::string, const Tensor*> by_name;
    for (const NamedTensor& s : saved) {
        check(by_name.emplace(s.name, &s.tensor).second,
              who + ": saved state holds '" + s.name + "' twice");
    }
    for (NamedTensor& entry : state) {
        auto it = by_name.find(entry.name);
        check(it != by_name.end(), who + ": saved state lacks '" + entry.name + "'");
        const Tensor& from = *it->second;
        check(from.shape() == entry.tensor.shape() && from.dtype() == entry.tensor.dtype(),
              who + ": saved '" + entry.name + "' is " + dtype_name(from.dtype()) + " " +
                  shape_str(from.shape()) + ", expected " + dtype_name(entry.tensor.dtype()) +
                  " " + shape_str(entry.tensor.shape()));
        entry.tensor.copy_from(from);  // the moments may live on the GPU
        by_name.erase(it);
    }
    if (!by_name.empty())
        throw std::runtime_error(who + ": saved state holds '" + by_name.begin()->first +
                                 "', which is not state of any parameter here");
}

void check_params(const std::vector<ParamGroup>& groups, const std::string& who) {
    std::unordered_set<std::string> names;
    for (const ParamGroup& group : groups) {
        check(group.weight_decay >= 0, who + ": weight_decay must be >= 0, got " +
                                           std::to_string(group.weight_decay));
        for (const NamedTensor& p : group.params) {
            check(names.insert(p.name).second, who + ": parameter '" + p.name + "' given twice");
            check(p.tensor.defined() && p.tensor.dtype() == DType::F32,
                  who + ": parameter '" + p.name + "' must be a float32 tensor");
        }
    }
}

Tensor param_gradient(const NamedTensor& param, const char* who) {
    Tensor grad = param.tensor.grad();
    if (!grad.defined()) return grad;
    check_same_device(who, {param.tensor, grad});
    // Tested before the message is built: this runs for every parameter on every step.
    if (grad.dtype() != DType::F32 || grad.shape() != param.tensor.shape())
        throw std::runtime_error(std::string(who) + ": gradient of '" + param.name +
                                 "' must be a float32 tensor of shape " + shape_str(param.tensor.shape()));
    return grad;
}

}  // namespace qdq
