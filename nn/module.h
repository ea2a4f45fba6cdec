// Module: the one base of every layer. It only names things: parameters and child modules
// registered in construction order give Hugging Face's state_dict keys
// ("bert.encoder.layer.0.attention.self.query.weight"), and train/eval propagates to children.
// Each module keeps its own forward signature; there is no virtual forward.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "autograd/named_tensors.h"

namespace qdq::nn {

class Module {
public:
    Module() = default;
    virtual ~Module() = default;
    // Registered pointers point into the object itself: modules never move or copy.
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // Parameters of this module and its children, depth first, keys joined with '.'.
    // The tensors are handles on the live parameters (writing their data updates the model).
    NamedTensors named_parameters(const std::string& prefix = "") const;
    // Buffers: state that is saved but not trained (e.g. a quantizer's calibrated amax).
    NamedTensors named_buffers(const std::string& prefix = "") const;
    // Parameters then buffers: what weight files and checkpoints hold.
    NamedTensors state_dict() const;
    int64_t parameter_count() const;

    const std::vector<std::pair<std::string, Module*>>& children() const { return children_; }

    void train(bool on = true);
    void eval() { train(false); }
    bool is_training() const { return training_; }

protected:
    // The returned handle is the module's own member; loading weights copies into it,
    // never replaces it, so the registry and the member always agree.
    Tensor register_parameter(const std::string& name, Tensor tensor);
    Tensor register_buffer(const std::string& name, Tensor tensor);
    template <typename M>
    M& register_module(const std::string& name, M& child) {
        children_.emplace_back(name, &child);
        return child;
    }

private:
    std::vector<std::pair<std::string, Tensor>> parameters_;
    std::vector<std::pair<std::string, Tensor>> buffers_;
    std::vector<std::pair<std::string, Module*>> children_;
    bool training_ = true;
};

}  // namespace qdq::nn
