#include "nn/module.h"

namespace qdq::nn {

namespace {

// Depth-first walk collecting one kind of entry (parameters or buffers) with full keys.
template <typename Entries>
void collect(const Module& m, const std::string& prefix, NamedTensors& out, Entries entries) {
    std::string base = prefix.empty() ? "" : prefix + ".";
    for (const auto& [name, tensor] : entries(m)) out.push_back({base + name, tensor});
    for (const auto& [name, child] : m.children()) collect(*child, base + name, out, entries);
}

}  // namespace

NamedTensors Module::named_parameters(const std::string& prefix) const {
    NamedTensors out;
    collect(*this, prefix, out, [](const Module& m) -> const auto& { return m.parameters_; });
    return out;
}

NamedTensors Module::named_buffers(const std::string& prefix) const {
    NamedTensors out;
    collect(*this, prefix, out, [](const Module& m) -> const auto& { return m.buffers_; });
    return out;
}

NamedTensors Module::state_dict() const {
    NamedTensors out = named_parameters();
    NamedTensors buffers = named_buffers();
    out.insert(out.end(), buffers.begin(), buffers.end());
    return out;
}

int64_t Module::parameter_count() const {
    int64_t n = 0;
    for (const NamedTensor& p : named_parameters()) n += p.tensor.numel();
    return n;
}

void Module::move_to(Device device) const {
    for (NamedTensor t : state_dict()) t.tensor.move_to(device);
}

void Module::train(bool on) {
    training_ = on;
    for (auto& [name, child] : children_) child->train(on);
}

Tensor Module::register_parameter(const std::string& name, Tensor tensor) {
    tensor.set_requires_grad(true);
    parameters_.emplace_back(name, tensor);
    return tensor;
}

TensorQuantizer* Module::attach_quantizer(const std::string& name, TensorQuantizer quantizer) {
    for (const auto& [existing, q] : quantizers_)
        check(existing != name, "attach_quantizer: the module already has a quantizer '" + name + "'");
    quantizers_.emplace_back(name, std::make_unique<TensorQuantizer>(std::move(quantizer)));
    TensorQuantizer* q = quantizers_.back().second.get();
    // A learned range trains with the weights; a calibrated one is state that is only saved.
    if (q->desc.learn_amax || q->desc.learn_step_size) parameters_.emplace_back(name + "._amax", q->amax);
    else buffers_.emplace_back(name + "._amax", q->amax);
    return q;
}

std::vector<std::pair<std::string, TensorQuantizer*>> Module::named_quantizers(const std::string& prefix) const {
    std::vector<std::pair<std::string, TensorQuantizer*>> out;
    std::string base = prefix.empty() ? "" : prefix + ".";
    for (const auto& [name, q] : quantizers_) out.emplace_back(base + name, q.get());
    for (const auto& [name, child] : children_) {
        auto below = child->named_quantizers(base + name);
        out.insert(out.end(), below.begin(), below.end());
    }
    return out;
}

Tensor Module::register_buffer(const std::string& name, Tensor tensor) {
    buffers_.emplace_back(name, tensor);
    return tensor;
}

}  // namespace qdq::nn
