#include "optim/sgd.h"

#include <stdexcept>

#include "autograd/parallel.h"
#include "optim/state.h"

namespace qdq {

namespace {

constexpr int64_t kGrain = 1 << 15;

// Scalars as torch hands them to its float32 kernels: Python floats rounded to float.
struct SgdScalars {
    float weight_decay;
    float momentum;
    float neg_lr;
};

// param, grad, buffer: [n]; buffer is null without momentum. The branches are loop-invariant.
void sgd_update(float* param, const float* grad, float* buffer, int64_t n, const SgdScalars& s,
                bool nesterov) {
    parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            float d = grad[i];
            if (s.weight_decay != 0) d = d + s.weight_decay * param[i];
            if (buffer) {
                float b = buffer[i] * s.momentum + d;
                buffer[i] = b;
                d = nesterov ? d + s.momentum * b : b;
            }
            param[i] = param[i] + s.neg_lr * d;
        }
    });
}

}  // namespace

Sgd make_sgd(std::vector<ParamGroup> groups, const SgdOptions& options) {
    check_params(groups, "SGD");
    check(options.momentum >= 0,
          "SGD: momentum must be >= 0, got " + std::to_string(options.momentum));
    check(!options.nesterov || options.momentum > 0, "SGD: nesterov needs momentum > 0");
    Sgd opt{std::move(groups), options, {}};
    if (options.momentum == 0) return opt;
    for (const ParamGroup& group : opt.groups)
        for (const NamedTensor& p : group.params)
            opt.state.push_back({p.name + ".momentum_buffer", zeros(p.tensor.shape())});
    return opt;
}

void sgd_step(Sgd& opt, double lr) {
    if (!(lr >= 0)) throw std::runtime_error("SGD: lr must be >= 0, got " + std::to_string(lr));
    bool momentum = opt.options.momentum != 0;
    size_t k = 0;
    for (const ParamGroup& group : opt.groups) {
        SgdScalars scalars{(float)group.weight_decay, (float)opt.options.momentum, (float)-lr};
        for (const NamedTensor& p : group.params) {
            float* buffer = nullptr;
            if (momentum) {
                if (k >= opt.state.size() || opt.state[k].tensor.shape() != p.tensor.shape())
                    throw std::runtime_error("SGD: state does not match the parameters at '" +
                                             p.name + "' (restore state with load_state)");
                buffer = opt.state[k++].tensor.f32();
            }
            Tensor grad = param_gradient(p, "SGD");
            if (!grad.defined()) continue;
            sgd_update(p.tensor.f32(), grad.f32(), buffer, p.tensor.numel(), scalars,
                       opt.options.nesterov);
        }
    }
}

}  // namespace qdq
