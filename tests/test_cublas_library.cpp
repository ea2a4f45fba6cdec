// cuBLAS is opened by the first product on a GPU (cuda/cublas_library.h), so a process of a
// build with the CUDA backend that runs on the CPU never pays its start-up. Built only with the
// real backend; runs with or without a GPU.
#include <gtest/gtest.h>

#include "autograd/ops.h"
#include "cuda/backend.h"
#include "cuda/cublas_library.h"

using namespace qdq;

TEST(CublasLibrary, OpensAtItsFirstUseAndResolvesEveryEntryPoint) {
    const Tensor a = full({4, 3}, 0.5f), b = full({3, 2}, 2.0f);
    EXPECT_FLOAT_EQ(matmul(a, b).to_vector()[0], 3.0f);
    const int devices = cuda::device_count();
    EXPECT_FALSE(cuda::cublas_loaded()) << "a product on the CPU and a device query opened cuBLAS";

    const cuda::CublasLibrary& api = cuda::cublas();
    EXPECT_TRUE(cuda::cublas_loaded());
    EXPECT_NE(api.create, nullptr);
    EXPECT_NE(api.sgemm, nullptr);
    EXPECT_NE(api.sgemm_strided_batched, nullptr);
    EXPECT_NE(api.gemm_strided_batched_ex, nullptr);
    EXPECT_EQ(&cuda::cublas(), &api);  // opened once

    // The resolved function is cuBLAS's: without a device it refuses a handle, as linked it would.
    cublasHandle_t handle = nullptr;
    const cublasStatus_t status = api.create(&handle);
    if (devices > 0)
        EXPECT_EQ(status, CUBLAS_STATUS_SUCCESS);
    else
        EXPECT_NE(status, CUBLAS_STATUS_SUCCESS);
}
