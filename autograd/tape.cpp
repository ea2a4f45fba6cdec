#include "autograd/tape.h"

#include <unordered_map>
#include <unordered_set>

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

void record(Tensor& output, const std::vector<Tensor>& inputs, std::function<void(const Tensor&)> backward) {
    output.set_requires_grad(true);
    Node node{output, {}, std::move(backward)};
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) node.inputs.push_back(t);
    tape.push_back(std::move(node));
}

void backward(const Tensor& root) {
    check(root.defined() && root.numel() == 1,
          "backward() needs a one-element tensor (a loss); reduce it first");
    backward(root, full(root.shape(), 1.0f, root.device()));  // filled where it lies: no copy
}

namespace {

// How many nodes on the tape read each leaf (an input that no node produced).
std::unordered_map<TensorImpl*, int64_t> leaf_reads() {
    std::unordered_set<TensorImpl*> produced;
    for (const Node& node : tape) produced.insert(node.output.impl());
    std::unordered_map<TensorImpl*, int64_t> reads;
    for (const Node& node : tape)
        for (const Tensor& t : node.inputs)
            if (!produced.count(t.impl())) ++reads[t.impl()];
    return reads;
}

// The reverse walk. Every node's output is an intermediate result: its gradient is consumed
// here and freed. Moving the node out first also frees its saved activations as it goes.
void run_tape(const Tensor& root, const Tensor& grad_root, const BackwardObserver* observer) {
    check(root.defined() && root.requires_grad(), "backward(): the tensor does not require grad");
    check_same_shape(root, grad_root, "backward");
    std::unordered_map<TensorImpl*, int64_t> reads;
    if (observer) reads = leaf_reads();
    add_inplace(root.grad_buffer(), grad_root);
    for (size_t i = tape.size(); i-- > 0;) {
        Node node = std::move(tape[i]);
        tape.pop_back();
        Tensor grad = node.output.grad();
        if (grad.defined()) {
            node.backward(grad);
            node.output.zero_grad();
        }
        if (!observer) continue;
        for (const Tensor& t : node.inputs) {
            auto it = reads.find(t.impl());
            if (it != reads.end() && --it->second == 0 && observer->leaf_ready) observer->leaf_ready(t);
        }
        if (observer->node_done) observer->node_done();
    }
    tape.clear();
}

}  // namespace

void backward(const Tensor& root, const Tensor& grad_root) { run_tape(root, grad_root, nullptr); }

void backward(const Tensor& root, const BackwardObserver& observer) {
    check(root.defined() && root.numel() == 1,
          "backward() needs a one-element tensor (a loss); reduce it first");
    run_tape(root, full(root.shape(), 1.0f, root.device()), &observer);
}

void clear_tape() { tape.clear(); }

size_t tape_size() { return tape.size(); }

}  // namespace qdq
