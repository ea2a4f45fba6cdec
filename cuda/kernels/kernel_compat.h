// What every kernel file (cuda/kernels/*.cuh) includes first: nvcc's CUDA, with launch() over
// <<<>>> and an error check, or, compiled by g++ in the tests, CUDA's model on host threads
// (cuda/host_threads.h). Kernels call launch(kernel, grid, block, args...), never <<<>>>, so
// that one text serves both.
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include "cuda/check.h"

namespace qdq::cuda {

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
    kernel<<<grid, block>>>(args...);
    QDQ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace qdq::cuda

#else

#include "cuda/host_threads.h"

#endif
