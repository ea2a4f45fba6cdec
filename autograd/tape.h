// The tape: a vector of nodes in execution order, one per differentiable op whose inputs
// need a gradient while grad mode is on. backward() is a reverse loop over it (no
// recursion, so depth is unlimited), then the tape and every activation its nodes saved
// are freed. Gradients accumulate with += into each tensor's grad buffer, so a tensor
// used twice gets both contributions and two backward passes add up.
#pragma once

#include <functional>
#include <vector>

#include "autograd/tensor.h"

namespace qdq {

struct Node {
    Tensor output;
    // The op's inputs that need a gradient: what backward() watches to tell when a leaf's
    // gradient is final (BackwardObserver).
    std::vector<Tensor> inputs;
    // Called with the output's gradient; adds each input's contribution into that input's
    // grad_buffer(). The closure owns whatever the op saved for backward.
    std::function<void(const Tensor& grad_output)> backward;
};

bool grad_enabled();

// Disables recording for its scope (evaluation, optimizer updates, calibration).
class NoGradGuard {
public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

// True when an op on these inputs must be recorded.
bool needs_grad(std::initializer_list<Tensor> inputs);

// Marks `output` as requiring grad and appends its node to the tape. `inputs` are the op's
// inputs (as given to needs_grad); those that need no gradient are not kept.
void record(Tensor& output, const std::vector<Tensor>& inputs, std::function<void(const Tensor&)> backward);

// Seeds d(root)/d(root) = 1 (root must have one element), runs every node in reverse and
// clears the tape. Gradients of intermediate results are released as soon as they are used;
// leaves (tensors created by the user with requires_grad) keep theirs.
void backward(const Tensor& root);
// Same, seeding d(loss)/d(root) = grad_root (root's shape), as torch's tensor.backward(grad).
void backward(const Tensor& root, const Tensor& grad_root);

// What a caller of backward() can watch, e.g. to start reducing gradients across processes
// while the rest of the pass runs (parallel/grad_reducer.h).
struct BackwardObserver {
    // A leaf's gradient is final: no node left to run reads the leaf. Called once for each leaf
    // the tape reads, in the order they become final.
    std::function<void(const Tensor& leaf)> leaf_ready;
    // After every node (may be empty).
    std::function<void()> node_done;
};
void backward(const Tensor& root, const BackwardObserver& observer);

// Drops the tape without running it (e.g. after a forward pass whose loss is discarded).
void clear_tape();

size_t tape_size();

}  // namespace qdq
