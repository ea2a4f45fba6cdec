// The CUDA kernels on host threads (cuda/host_threads.h) under ThreadSanitizer, which this binary
// is always built with: the block reduction and the row softmax have no data race and give the
// right numbers (against sums and a softmax in double worked out here), a shuffle whose mask
// leaves out active lanes is refused, and a kernel that forgets __syncthreads is caught (the
// negative case: shared memory read before the barrier that should order it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/layernorm.cuh"
#include "cuda/kernels/softmax.cuh"

using namespace qdq;

namespace {

__global__ void block_sums(float* out, const float* x) {
    const float v = cuda::block_reduce(x[blockIdx.x * blockDim.x + threadIdx.x], cuda::SumOp{}, 0.0f);
    if (threadIdx.x == blockDim.x - 1) out[blockIdx.x] = v;  // every thread holds the sum
}

// The warps' partial sums written to shared memory and read by thread 0 with no barrier between.
__global__ void block_sum_without_barrier(float* out, const float* x) {
    __shared__ float partial[1024];
    partial[threadIdx.x] = x[threadIdx.x];
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (unsigned i = 0; i < blockDim.x; ++i) s += partial[i];
        *out = s;
    }
}

__global__ void shuffle_with_a_lane_missing(float* out) { *out = __shfl_xor_sync(0x7fffffffu, 1.0f, 1); }

}  // namespace

TEST(CudaKernelsUnderTsan, BlockReduceSumsExactlyAtEveryBlockSize) {
    for (unsigned block : {32u, 64u, 256u}) {
        std::vector<float> x(3 * block), out(3, NAN);
        for (size_t i = 0; i < x.size(); ++i) x[i] = (float)(i % 7);  // small integers: exact sums
        cuda::launch(block_sums, dim3(3), dim3(block), out.data(), (const float*)x.data());
        for (unsigned b = 0; b < 3; ++b) {
            double expected = 0;
            for (unsigned t = 0; t < block; ++t) expected += x[b * block + t];
            EXPECT_EQ(out[b], expected) << block;
        }
    }
}

TEST(CudaKernelsUnderTsan, SoftmaxRowsMatchADoubleReference) {
    const int64_t rows = 2, C = 77;
    std::vector<float> x(rows * C), y(rows * C);
    for (int64_t i = 0; i < rows * C; ++i) x[i] = (float)std::sin(0.37 * (double)i) * 4.0f;
    const std::vector<int64_t> mask_rows = {0, 0};
    cuda::softmax_forward(y.data(), x.data(), nullptr, mask_rows.data(), 0.5f, rows, C, 64);
    for (int64_t r = 0; r < rows; ++r) {
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < C; ++j) m = std::max(m, 0.5 * x[r * C + j]);
        for (int64_t j = 0; j < C; ++j) s += std::exp(0.5 * x[r * C + j] - m);
        for (int64_t j = 0; j < C; ++j) EXPECT_NEAR(y[r * C + j], std::exp(0.5 * x[r * C + j] - m) / s, 2e-7);
    }
}

// Add & Norm writes the row's sum and then every thread reads all of it: without the barrier
// between, this is a race. γ = 1, β = 0: each row comes out with mean 0 and variance 1.
TEST(CudaKernelsUnderTsan, AddLayerNormIsRaceFreeAndNormalizes) {
    const int64_t rows = 2, C = 100;
    std::vector<float> x(rows * C), res(rows * C), y(rows * C), sum(rows * C), mean(rows), rstd(rows);
    for (int64_t i = 0; i < rows * C; ++i) x[i] = (float)std::cos(0.11 * (double)i), res[i] = (float)(i % 3);
    const std::vector<float> gamma(C, 1.0f), beta(C, 0.0f);
    cuda::layernorm_forward(y.data(), mean.data(), rstd.data(), sum.data(), x.data(), res.data(), gamma.data(), beta.data(),
                            1e-12f, rows, C, 64);
    for (int64_t r = 0; r < rows; ++r) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < C; ++j) m += y[r * C + j] / (double)C;
        for (int64_t j = 0; j < C; ++j) v += (y[r * C + j] - m) * (y[r * C + j] - m) / (double)C;
        EXPECT_NEAR(m, 0.0, 1e-6);
        EXPECT_NEAR(v, 1.0, 1e-5);
    }
}

TEST(CudaKernelsUnderTsan, AShuffleMaskMissingAnActiveLaneIsRefused) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    float out = 0;
    EXPECT_DEATH(cuda::launch(shuffle_with_a_lane_missing, dim3(1), dim3(32), &out), "mask");
}

TEST(CudaKernelsUnderTsan, AMissingSyncthreadsIsADataRace) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    std::vector<float> x(64, 1.0f);
    float out = 0;
    // ThreadSanitizer reports the race and, at exit, fails the process with its exit code, 66.
    EXPECT_EXIT(
        {
            cuda::launch(block_sum_without_barrier, dim3(1), dim3(64), &out, (const float*)x.data());
            std::exit(0);
        },
        ::testing::ExitedWithCode(66), "data race");
    // The same reduction done right passes: no report, exit 0.
    EXPECT_EXIT(
        {
            cuda::launch(block_sums, dim3(1), dim3(64), &out, (const float*)x.data());
            std::exit(out == 64.0f ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}
