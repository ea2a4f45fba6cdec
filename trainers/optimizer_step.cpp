// One optimizer step of a run (trainers/trainer.h optimizer_step): the micro-batches' forward and
// backward, this rank's share of each under data parallelism, clipping and the AdamW update.
// trainer.cpp runs the steps.
#include "trainers/trainer.h"

#include <algorithm>
#include <cmath>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "data/loader.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "parallel/communicator.h"
#include "parallel/grad_reducer.h"

namespace qdq {

std::vector<int64_t> rank_share(const std::vector<int64_t>& batch, int rank, int ranks) {
    const size_t n = batch.size(), base = n / (size_t)ranks, extra = n % (size_t)ranks, r = (size_t)rank;
    const size_t begin = r * base + std::min(r, extra);
    return {batch.begin() + (int64_t)begin, batch.begin() + (int64_t)(begin + base + (r < extra))};
}

StepResult optimizer_step(Task& task, BatchLoader& loader, Rng& data_rng, const std::vector<ParamGroup>& groups,
                          AdamW& optimizer, const TrainingSettings& t, double lr, GradReducer* reducer) {
    StepResult out;
    const World& w = world();
    const int64_t micro_batches = t.gradient_accumulation_steps;
    std::vector<int64_t> batch;
    for (int64_t i = 0; i < micro_batches; ++i) {
        while (!loader.next(batch)) {}  // an epoch's end: the loader moves to the next one
        out.epoch_done = out.epoch_done || loader.epoch_is_over();
        out.examples.insert(out.examples.end(), batch.begin(), batch.end());
        const std::vector<int64_t> share = reducer ? rank_share(batch, w.rank, w.size) : batch;
        if (share.empty()) continue;  // more ranks than examples: this one adds zeros
        // The share's mean loss, weighted by its part of the batch: summed over the ranks, the
        // batch's mean.
        const float weight = reducer ? (float)((double)share.size() / ((double)batch.size() * (double)micro_batches))
                                     : 1.0f / (float)micro_batches;
        Tensor loss = task.train_loss(share, data_rng);
        if (weight != 1.0f) loss = mul_scalar(loss, weight);
        const double value = loss.item();
        if (!reducer && !std::isfinite(value)) {
            clear_tape();
            out.bad = "the loss is " + std::to_string(value * (double)micro_batches);
            return out;
        }
        out.loss += value;
        if (reducer && i == micro_batches - 1) backward(loss, reducer->observer());
        else backward(loss);
    }
    if (reducer) {
        // Every rank decides alike: on the summed loss, and the summed gradients' norm.
        reducer->finish();
        allreduce_sum(&out.loss, 1);
        if (!std::isfinite(out.loss)) {
            out.bad = "the loss is " + std::to_string(out.loss * (double)micro_batches);
            return out;
        }
    }
    out.grad_norm = clip_grad_norm(groups, t.max_grad_norm > 0 ? t.max_grad_norm : INFINITY);
    if (!std::isfinite(out.grad_norm)) {
        out.bad = "the gradient norm is " + std::to_string(out.grad_norm);
        return out;
    }
    adamw_step(optimizer, lr);
    for (const ParamGroup& g : groups)
        for (NamedTensor p : g.params) p.tensor.zero_grad();
    return out;
}

}  // namespace qdq
