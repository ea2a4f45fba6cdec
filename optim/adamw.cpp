#include "optim/adamw.h"

#include <cmath>
#include <stdexcept>

#include "autograd/parallel.h"
#include "cuda/backend.h"
#include "cuda/optimizer_math.h"
#include "optim/state.h"

namespace qdq {

namespace {

// Elements per thread below which a parameter is updated on the calling thread.
constexpr int64_t kGrain = 1 << 15;

// param, exp_avg, exp_avg_sq, grad: [n], in one pass (adamw_element, shared with the GPU).
void adamw_update(float* param, float* exp_avg, float* exp_avg_sq, const float* grad, int64_t n,
                  const AdamWScalars& s) {
    parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) adamw_element(param[i], exp_avg[i], exp_avg_sq[i], grad[i], s);
    });
}

}  // namespace

AdamWScalars adamw_scalars(const AdamWOptions& o, double lr, double weight_decay, int64_t t) {
    double bias_correction1 = 1.0 - std::pow(o.beta1, (double)t);
    double bias_correction2 = 1.0 - std::pow(o.beta2, (double)t);
    return {(float)(1.0 - lr * weight_decay),
            (float)o.beta1,
            (float)(1.0 - o.beta1),
            (float)o.beta2,
            (float)(1.0 - o.beta2),
            (float)std::sqrt(bias_correction2),
            (float)(-(lr / bias_correction1)),
            (float)o.eps};
}

AdamW make_adamw(std::vector<ParamGroup> groups, const AdamWOptions& options) {
    check_params(groups, "AdamW");
    check(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
          "AdamW: betas must lie in [0, 1), got (" + std::to_string(options.beta1) + ", " +
              std::to_string(options.beta2) + ")");
    check(options.eps >= 0, "AdamW: eps must be >= 0, got " + std::to_string(options.eps));
    AdamW opt{std::move(groups), options, {}};
    for (const ParamGroup& group : opt.groups) {
        for (const NamedTensor& p : group.params) {
            // The moments live with their parameter; the step count is the host's.
            opt.state.push_back({p.name + ".exp_avg", zeros(p.tensor.shape(), DType::F32, p.tensor.device())});
            opt.state.push_back({p.name + ".exp_avg_sq", zeros(p.tensor.shape(), DType::F32, p.tensor.device())});
            opt.state.push_back({p.name + ".step", zeros({}, DType::I32)});
        }
    }
    return opt;
}

void adamw_step(AdamW& opt, double lr) {
    if (!(lr >= 0)) throw std::runtime_error("AdamW: lr must be >= 0, got " + std::to_string(lr));
    std::vector<cuda::AdamWTensor> on_device;  // updated together: a launch per batch, not per parameter
    size_t k = 0;
    for (const ParamGroup& group : opt.groups) {
        for (const NamedTensor& p : group.params) {
            if (k + 3 > opt.state.size() || opt.state[k].tensor.shape() != p.tensor.shape())
                throw std::runtime_error("AdamW: state does not match the parameters at '" +
                                         p.name + "' (restore state with load_state)");
            const Tensor& exp_avg = opt.state[k].tensor;
            const Tensor& exp_avg_sq = opt.state[k + 1].tensor;
            int32_t& t = *opt.state[k + 2].tensor.i32();
            k += 3;
            Tensor grad = param_gradient(p, "AdamW");
            if (!grad.defined()) continue;
            ++t;
            const AdamWScalars scalars = adamw_scalars(opt.options, lr, group.weight_decay, t);
            if (p.tensor.is_cuda())
                on_device.push_back({p.tensor.f32(), exp_avg.f32(), exp_avg_sq.f32(), grad.f32(), p.tensor.numel(), scalars});
            else
                adamw_update(p.tensor.f32(), exp_avg.f32(), exp_avg_sq.f32(), grad.f32(), p.tensor.numel(), scalars);
        }
    }
    if (!on_device.empty()) cuda::adamw_update(on_device);
}

}  // namespace qdq
