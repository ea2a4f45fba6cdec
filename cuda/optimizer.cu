// AdamW's entry point (cuda/kernels/optimizer.cuh) over device pointers: every parameter in as few
// launches as the kernel's arguments allow (cuda/kernels/tensor_batch.cuh).
#include "cuda/backend.h"
#include "cuda/kernels/optimizer.cuh"
#include "cuda/kernels/tensor_batch.cuh"

namespace qdq::cuda {

void adamw_update(const std::vector<AdamWTensor>& tensors) {
    std::vector<AdamWOp> ops;
    std::vector<int64_t> n;
    for (const AdamWTensor& t : tensors) {
        ops.push_back({t.param, t.exp_avg, t.exp_avg_sq, t.grad, t.s});
        n.push_back(t.n);
    }
    for_each_of_batches(ops, n);
}

}  // namespace qdq::cuda
