// Work over many tensors in one launch, as the optimizer's step and the clipping need: a launch a
// tensor costs the host microseconds each, 200 times a pass at BERT-base. Each tensor gets the
// blocks a launch of its own would get, numbered one after another, so that every block does
// exactly the work it did alone and the results do not change. The tensors travel in the
// kernel's arguments, not in device memory: nothing is uploaded, so nothing is waited for. CUDA
// takes at most 4 KB of arguments, which bounds the tensors of one launch (kBatchTensors).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "cuda/kernels/kernel_compat.h"

namespace qdq::cuda {

constexpr size_t kKernelArgumentBytes = 4096;

// As many tensors with an Item each as fit the arguments beside a few words of their own.
template <typename Item>
constexpr int kBatchTensors = (int)((kKernelArgumentBytes - 64) / (sizeof(Item) + sizeof(int64_t) + sizeof(unsigned)));

template <typename Item>
struct TensorBatch {
    static constexpr int kMax = kBatchTensors<Item>;
    int count = 0;
    unsigned first_block[kMax + 1] = {0};  // tensor k has blocks [first_block[k], first_block[k + 1])
    int64_t n[kMax];
    Item item[kMax];
};

// The block's tensor (the last k with first_block[k] <= blockIdx.x), its index among that
// tensor's blocks and their number.
struct BatchBlock {
    int tensor;
    unsigned block, blocks;
};

template <typename Item>
__device__ BatchBlock batch_block(const TensorBatch<Item>& batch) {
    int lo = 0, hi = batch.count - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (batch.first_block[mid] <= blockIdx.x) lo = mid;
        else hi = mid - 1;
    }
    return {lo, blockIdx.x - batch.first_block[lo], batch.first_block[lo + 1] - batch.first_block[lo]};
}

// Groups the tensors with elements into batches, tensor k given blocks_for(n[k]) blocks, and
// calls launch_batch(batch, first) for each, first being the batch's first block among all
// batches' (where its share of a per-block buffer begins).
template <typename Item, typename BlocksFor, typename LaunchBatch>
void for_each_batch(const std::vector<Item>& items, const std::vector<int64_t>& n, BlocksFor blocks_for,
                    LaunchBatch launch_batch) {
    static_assert(sizeof(TensorBatch<Item>) <= kKernelArgumentBytes, "a batch must fit CUDA's kernel arguments");
    if (items.size() != n.size()) throw std::invalid_argument("for_each_batch: one size per tensor");
    TensorBatch<Item> batch;
    size_t first = 0;
    auto flush = [&] {
        if (batch.count == 0) return;
        launch_batch(batch, first);
        first += batch.first_block[batch.count];
        batch.count = 0;
    };
    for (size_t k = 0; k < items.size(); ++k) {
        if (n[k] == 0) continue;
        if (batch.count == TensorBatch<Item>::kMax) flush();
        batch.item[batch.count] = items[k];
        batch.n[batch.count] = n[k];
        batch.first_block[batch.count + 1] = batch.first_block[batch.count] + blocks_for(n[k]);
        ++batch.count;
    }
    flush();
}

template <typename F>
__global__ void for_each_in_batch_kernel(TensorBatch<F> batch) {
    const BatchBlock b = batch_block(batch);
    const F f = batch.item[b.tensor];
    const int64_t n = batch.n[b.tensor];
    for (int64_t i = b.block * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)b.blocks * blockDim.x) f(i);
}

// for_each (cuda/kernels/for_each.cuh) of fs[k] over [0, n[k]) for every k, in as few launches as
// the arguments allow, each tensor's elements split over blocks as for_each splits them.
template <typename F>
void for_each_of_batches(const std::vector<F>& fs, const std::vector<int64_t>& n, unsigned block = 256) {
    if (block == 0 || block % 32 != 0) throw std::invalid_argument("for_each_of_batches: the block size must be a multiple of 32");
    auto blocks_for = [block](int64_t count) {
        const int64_t blocks = (count + block - 1) / block;
        return (unsigned)(blocks < kMaxGridStrideBlocks ? blocks : kMaxGridStrideBlocks);
    };
    for_each_batch(fs, n, blocks_for, [block](const TensorBatch<F>& batch, size_t) {
        launch(for_each_in_batch_kernel<F>, dim3(batch.first_block[batch.count]), dim3(block), batch);
    });
}

}  // namespace qdq::cuda
