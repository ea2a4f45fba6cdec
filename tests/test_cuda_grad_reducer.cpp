// Data parallel on the device (parallel/grad_reducer.h): the gradients of each bucket are
// gathered on the device as they become final and cross to the host in one copy, and back in one,
// so a step waits for the device twice per bucket, not twice per parameter. In one process the
// sum over ranks is the gradient itself, so every gradient must come back as it went, and one
// that the step never made must stay undefined, exactly as on the CPU.
#include <gtest/gtest.h>

#include <vector>

#include "autograd/ops.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "parallel/grad_reducer.h"
#include "tests/support/gradcheck.h"

using namespace qdq;
using qdq::testing::random_tensor;

namespace {

constexpr size_t kParameters = 40;
constexpr size_t kUnread = 7;  // the loss never reads it

// Parameters of uneven sizes on `device`, and the loss Σ_i Σ p_i ⊙ c_i over all but kUnread,
// whose gradient for p_i is c_i.
struct Model {
    std::vector<Tensor> params, weights;
    explicit Model(Device device) {
        for (size_t i = 0; i < kParameters; ++i) {
            const int64_t n = 1 + (int64_t)(i * 37 % 300);
            params.push_back(random_tensor({n}, 100 + i).to(device).set_requires_grad());
            weights.push_back(random_tensor({n}, 200 + i).to(device));
        }
    }
    Tensor loss() const {
        Tensor total;
        for (size_t i = 0; i < kParameters; ++i) {
            if (i == kUnread) continue;
            const Tensor term = sum_all(mul(params[i], weights[i]));
            total = total.defined() ? add(total, term) : term;
        }
        return total;
    }
};

}  // namespace

TEST(Cuda, DataParallelGradientsCrossToTheHostOncePerBucket) {
    if (cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    Model model(Device::CUDA);
    GradReducer reducer(model.params, 1024);  // buckets of about 256 floats
    ASSERT_GT(reducer.bucket_count(), 5u);
    for (int step = 0; step < 2; ++step) {
        for (Tensor& p : model.params) p.zero_grad();
        const int64_t waits = cuda::host_waits();
        backward(model.loss(), reducer.observer());  // the loss and the backward's seed made on the device
        reducer.finish();
        EXPECT_EQ(cuda::host_waits() - waits, 2 * (int64_t)reducer.bucket_count()) << "step " << step;
        for (size_t i = 0; i < kParameters; ++i) {
            const Tensor grad = model.params[i].grad();
            if (i == kUnread) {
                EXPECT_FALSE(grad.defined()) << "parameter " << i;
                continue;
            }
            ASSERT_TRUE(grad.defined()) << "parameter " << i;
            EXPECT_TRUE(grad.is_cuda()) << "parameter " << i;
            EXPECT_EQ(grad.to_vector(), model.weights[i].to_vector()) << "parameter " << i;
        }
    }
}

TEST(Cuda, AReducerRefusesParametersOnBothDevices) {
    if (cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    const std::vector<Tensor> mixed{random_tensor({3}, 1), random_tensor({3}, 2).to(Device::CUDA)};
    EXPECT_THROW(GradReducer(mixed, 1024), std::invalid_argument);
}
