// Module: the one base of every layer. It only names things: parameters and child modules
// registered in construction order give Hugging Face's state_dict keys
// ("bert.encoder.layer.0.attention.self.query.weight"), and train/eval propagates to children.
// Each module keeps its own forward signature; there is no virtual forward.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "autograd/named_tensors.h"
#include "quant/tensor_quantizer.h"

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

    // Fake quantizers, attached after construction by attach_bert_quantizers (qdqbert/qdq_placement.h) under QDQBERT's
    // names ("_input_quantizer", "matmul_q_input_quantizer", ...). The amax becomes the buffer
    // "<name>._amax" (a parameter when the range is learned), so checkpoints carry it under
    // QDQBERT's state_dict keys. The returned pointer lives as long as the module.
    TensorQuantizer* attach_quantizer(const std::string& name, TensorQuantizer quantizer);
    // This module's quantizers and its children's, depth first, with dotted names.
    std::vector<std::pair<std::string, TensorQuantizer*>> named_quantizers(const std::string& prefix = "") const;

    // Every parameter and buffer moved to `device` in place (Tensor::move_to): a model is moved
    // once, before a run, and its ops then run where its tensors are.
    void move_to(Device device) const;

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
    std::vector<std::pair<std::string, std::unique_ptr<TensorQuantizer>>> quantizers_;
    bool training_ = true;
};

}  // namespace qdq::nn
