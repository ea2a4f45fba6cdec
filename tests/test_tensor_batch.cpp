// Many tensors in one launch (cuda/kernels/tensor_batch.cuh), on the host's model of CUDA: every
// element of every tensor is visited once, by the block and thread that a launch of the tensor's
// own would give it, in as few launches as CUDA's 4 KB of kernel arguments allow.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/kernels/for_each.cuh"
#include "cuda/kernels/tensor_batch.cuh"

using namespace qdq;

namespace {

// Records which block and thread visited each element, and how often.
struct VisitOp {
    int* visits;
    unsigned* block;
    unsigned* thread;
    __host__ __device__ void operator()(int64_t i) const {
        ++visits[i];
        block[i] = blockIdx.x;
        thread[i] = threadIdx.x;
    }
};

struct Visits {
    std::vector<int> visits;
    std::vector<unsigned> block, thread;
    explicit Visits(int64_t n) : visits((size_t)n, 0), block((size_t)n, 0), thread((size_t)n, 0) {}
    VisitOp op() { return {visits.data(), block.data(), thread.data()}; }
};

}  // namespace

TEST(CudaKernelsOnHost, ATensorBatchGivesEachTensorTheBlocksOfALaunchOfItsOwn) {
    const int per_launch = cuda::kBatchTensors<VisitOp>;
    ASSERT_GE(per_launch, 100);  // 24 bytes an op: the point of batching is many tensors a launch
    std::vector<int64_t> sizes;
    for (int k = 0; k < 2 * per_launch + 5; ++k) sizes.push_back(k % 9 == 4 ? 0 : (k * 37) % 1500 + 1);
    std::vector<Visits> batched, alone;
    std::vector<VisitOp> ops;
    int with_elements = 0;
    for (int64_t n : sizes) {
        batched.emplace_back(n);
        alone.emplace_back(n);
        with_elements += n > 0;
    }
    for (Visits& v : batched) ops.push_back(v.op());
    const int64_t before = cuda::launch_count;
    cuda::for_each_of_batches(ops, sizes, 64);
    EXPECT_EQ(cuda::launch_count - before, (with_elements + per_launch - 1) / per_launch);
    for (size_t k = 0; k < sizes.size(); ++k) {
        cuda::for_each(sizes[k], alone[k].op(), 64);
        EXPECT_EQ(batched[k].visits, std::vector<int>((size_t)sizes[k], 1)) << "tensor " << k;
        EXPECT_EQ(batched[k].thread, alone[k].thread) << "tensor " << k;
        // Blocks are numbered across the batch; within the tensor they are its own launch's.
        for (int64_t i = 0; i < sizes[k]; ++i)
            ASSERT_EQ(batched[k].block[(size_t)i] - batched[k].block[0], alone[k].block[(size_t)i]) << k << " " << i;
    }
}

TEST(CudaKernelsOnHost, ATensorBatchFitsTheKernelArgumentsAndRefusesMismatchedSizes) {
    EXPECT_LE(sizeof(cuda::TensorBatch<VisitOp>), cuda::kKernelArgumentBytes);
    Visits v(3);
    EXPECT_THROW(cuda::for_each_of_batches(std::vector<VisitOp>{v.op()}, {3, 4}), std::invalid_argument);
    EXPECT_THROW(cuda::for_each_of_batches(std::vector<VisitOp>{v.op()}, {3}, 48), std::invalid_argument);
    const int64_t before = cuda::launch_count;
    cuda::for_each_of_batches(std::vector<VisitOp>{v.op()}, {0});
    EXPECT_EQ(cuda::launch_count - before, 0) << "nothing to do launches nothing";
}
