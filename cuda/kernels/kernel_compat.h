// What every kernel file (cuda/kernels/*.cuh) includes first: nvcc's CUDA, with launch() over
// <<<>>> and an error check, or, compiled by g++ in the tests, CUDA's model on host threads
// (cuda/host_threads.h). Kernels call launch(kernel, grid, block, args...), never <<<>>>, so
// that one text serves both.
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include "cuda/check.h"
#include "cuda/launch_count.h"

namespace qdq::cuda {

// The most blocks a grid-stride kernel (for_each) is given: CUDA's limit for grid.x in older
// architectures' terms.
constexpr int64_t kMaxGridStrideBlocks = 65535;

template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
    ++launch_count;
    kernel<<<grid, block>>>(args...);
    QDQ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace qdq::cuda

#else

#include "cuda/host_threads.h"

namespace qdq::cuda {

// On the host every CUDA thread costs a fiber, so a grid-stride kernel gets few blocks and each
// thread strides over many elements: the loop that a GPU takes only beyond 65,535 blocks is then
// the one every test takes.
constexpr int64_t kMaxGridStrideBlocks = 4;

}  // namespace qdq::cuda

#endif
