// Elementwise kernels, named and ordered as their CPU twins in autograd/ops/elementwise.cpp.
#include "cuda/backend.h"
#include "cuda/check.h"

namespace qdq::cuda {

__global__ static void add_kernel(float* out, const float* a, const float* b, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

void add(float* out, const float* a, const float* b, int64_t n) {
    if (n == 0) return;
    int threads = 256;
    int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535);
    add_kernel<<<blocks, threads>>>(out, a, b, n);
    QDQ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace qdq::cuda
