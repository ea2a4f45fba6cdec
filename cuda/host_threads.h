// CUDA's execution model on the host, so that the kernels of cuda/kernels/*.cuh compile with g++
// and run in the tests, on machines without a GPU, against the CPU ops:
//   one host thread per CUDA thread of a block, blocks one after another;
//   threadIdx (thread-local), blockIdx, blockDim and gridDim as CUDA names them;
//   __shared__ as a static: one copy, which the one block running shares;
//   __syncthreads() a barrier of the block's threads;
//   __shfl_xor_sync() through the warp's lane slots and a barrier of its 32 threads, and the
//   mask must name every lane (these kernels never shuffle in divergent code);
//   atomicAdd and atomicMax through std::atomic_ref.
// Data races the real hardware would have are races here, which ThreadSanitizer reports (a
// missing __syncthreads in tests/test_cuda_kernels.cpp's broken kernel). Used by tests only:
// the product's host build never compiles a kernel.
#pragma once

#include <atomic>
#include <barrier>
#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx;
inline dim3 blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

namespace qdq::cuda_host {

constexpr unsigned kWarp = 32;

// What the threads of the running block share besides __shared__ memory.
struct Block {
    explicit Block(unsigned threads) : sync((std::ptrdiff_t)threads), lanes(threads) {
        for (unsigned w = 0; w < (threads + kWarp - 1) / kWarp; ++w)
            warps.push_back(std::make_unique<std::barrier<>>((std::ptrdiff_t)std::min(kWarp, threads - w * kWarp)));
    }
    std::barrier<> sync;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    std::vector<double> lanes;  // one per thread: what a shuffle exchanges (a float or a double, exactly)
};

inline Block* running = nullptr;

// Called with true before a launch and false after it, when set: the emulated device opens its
// memory to the host only then (cuda/emulated/device_memory.cpp). Unset in the kernel tests,
// whose "device" memory is plain host memory.
inline void (*device_access)(bool open) = nullptr;

[[noreturn]] inline void fail(const std::string& what) {
    std::fprintf(stderr, "cuda/host_threads.h: %s\n", what.c_str());
    std::abort();  // as a device-side assert ends the kernel
}

}  // namespace qdq::cuda_host

inline void __syncthreads() { qdq::cuda_host::running->sync.arrive_and_wait(); }

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
    using namespace qdq::cuda_host;
    const unsigned t = threadIdx.x, warp = t / kWarp, first = warp * kWarp;
    const unsigned lanes = std::min(kWarp, blockDim.x - first);
    const unsigned active = lanes == kWarp ? 0xffffffffu : (1u << lanes) - 1;
    if (mask != active) fail("__shfl_xor_sync: mask " + std::to_string(mask) + " but the active lanes are " + std::to_string(active));
    const unsigned partner = first + ((t - first) ^ (unsigned)lane_mask);
    if (partner >= first + lanes) fail("__shfl_xor_sync: lane " + std::to_string(partner) + " does not exist");
    running->lanes[t] = (double)value;
    running->warps[warp]->arrive_and_wait();
    const T out = (T)running->lanes[partner];
    running->warps[warp]->arrive_and_wait();  // before any lane writes its slot again
    return out;
}

inline float atomicAdd(float* address, float value) { return std::atomic_ref<float>(*address).fetch_add(value); }
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
    return std::atomic_ref<unsigned long long>(*address).fetch_add(value);
}
inline unsigned atomicMax(unsigned* address, unsigned value) {
    std::atomic_ref<unsigned> a(*address);
    unsigned old = a.load();
    while (old < value && !a.compare_exchange_weak(old, value)) {}
    return old;
}

namespace qdq::cuda {

// kernel<<<grid, block>>>(args...): every block in turn, each on blockDim.x host threads
// (one-dimensional grids and blocks, as every kernel here uses).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
    if (block.y != 1 || block.z != 1 || grid.y != 1 || grid.z != 1) cuda_host::fail("launch: one-dimensional only");
    if (block.x == 0 || block.x > 1024) cuda_host::fail("launch: blockDim.x must be in [1, 1024]");
    gridDim = grid;
    blockDim = block;
    if (cuda_host::device_access) cuda_host::device_access(true);
    for (unsigned b = 0; b < grid.x; ++b) {
        blockIdx = dim3(b);
        cuda_host::Block shared(block.x);
        cuda_host::running = &shared;
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block.x; ++t)
            threads.emplace_back([&, t] {
                threadIdx = dim3(t);
                kernel(args...);
            });
        for (std::thread& t : threads) t.join();
        cuda_host::running = nullptr;
    }
    if (cuda_host::device_access) cuda_host::device_access(false);
}

}  // namespace qdq::cuda
