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

// Marks `output` as requiring grad and appends its node to the tape.
void record(Tensor& output, std::function<void(const Tensor&)> backward);

// Seeds d(root)/d(root) = 1 (root must have one element), runs every node in reverse and
// clears the tape. Gradients of intermediate results are released as soon as they are used;
// leaves (tensors created by the user with requires_grad) keep theirs.
void backward(const Tensor& root);
// Same, seeding d(loss)/d(root) = grad_root (root's shape), as torch's tensor.backward(grad).
void backward(const Tensor& root, const Tensor& grad_root);

// Drops the tape without running it (e.g. after a forward pass whose loss is discarded).
void clear_tape();

size_t tape_size();

}  // namespace qdq
