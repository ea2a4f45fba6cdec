// Kernel launches and cuBLAS calls so far in this process, which backend.h's launches() reads:
// each is work the host puts in the device's queue at a cost of microseconds, so the count of a
// step says how much of its time is the host's. One counter for every translation unit (an
// inline variable), raised by launch() (cuda/kernels/kernel_compat.h, cuda/host_threads.h) and by
// the GEMM entry points once per cuBLAS call.
#pragma once

#include <atomic>
#include <cstdint>

namespace qdq::cuda {

inline std::atomic<int64_t> launch_count{0};

}  // namespace qdq::cuda
