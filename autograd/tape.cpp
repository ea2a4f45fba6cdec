#include "autograd/tape.h"

#include "autograd/ops.h"

namespace qdq {

namespace {
thread_local bool grad_mode = true;
thread_local std::vector<Node> tape;
}  // namespace

bool grad_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

bool needs_grad(std::initializer_list<Tensor> inputs) {
    if (!grad_mode) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

void record(Tensor& output, std::function<void(const Tensor&)> backward) {
    output.set_requires_grad(true);
    tape.push_back(Node{output, std::move(backward)});
}

void backward(const Tensor& root) {
    check(root.defined() && root.numel() == 1,
          "backward() needs a one-element tensor (a loss); reduce it first");
    backward(root, full(root.shape(), 1.0f).to(root.device()));
}

void backward(const Tensor& root, const Tensor& grad_root) {
    check(root.defined() && root.requires_grad(), "backward(): the tensor does not require grad");
    check_same_shape(root, grad_root, "backward");
    add_inplace(root.grad_buffer(), grad_root);
    // Every node's output is an intermediate result: its gradient is consumed here and freed.
    // Moving the node out first also frees its saved activations as the walk proceeds.
    for (size_t i = tape.size(); i-- > 0;) {
        Node node = std::move(tape[i]);
        tape.pop_back();
        Tensor grad = node.output.grad();
        if (!grad.defined()) continue;
        node.backward(grad);
        node.output.zero_grad();
    }
    tape.clear();
}

void clear_tape() { tape.clear(); }

size_t tape_size() { return tape.size(); }

}  // namespace qdq
