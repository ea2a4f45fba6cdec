// CUDA's execution model on the host, so that the kernels of cuda/kernels/*.cuh compile with g++
// and run in the tests, on machines without a GPU, against the CPU ops:
//   each CUDA thread of a block its own flow of control, blocks one after another;
//   threadIdx, blockIdx, blockDim and gridDim as CUDA names them;
//   __shared__ as a static: one copy, which the one block running shares;
//   __syncthreads() a barrier of the block's threads;
//   __shfl_xor_sync() through the warp's lane slots and a barrier of its 32 threads, and the
//   mask must name every lane (these kernels never shuffle in divergent code);
//   atomicAdd and atomicMax through std::atomic_ref.
// Two ways to give each CUDA thread its flow of control, chosen at compile time:
//   under ThreadSanitizer, one host thread per CUDA thread, so that data races the hardware
//   would have are races here, which it reports (a missing __syncthreads in
//   tests/test_cuda_kernels_tsan.cpp's broken kernel);
//   otherwise one fiber per CUDA thread (Boost.Context), all on the launching thread, switched
//   at barriers: the same semantics, without a thread's creation per CUDA thread, which made the
//   emulated device (cuda/emulated/) a hundred times slower. Boost's switch saves a few
//   registers; ucontext's swapcontext, used before, also made a system call (the signal mask)
//   at each, nine tenths of a whole run's time on the emulated device. A barrier some thread
//   never reaches is reported as the deadlock it would be.
// Used by tests only: the product's host build never compiles a kernel.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/launch_count.h"

#if defined(__SANITIZE_THREAD__)
#include <barrier>
#include <thread>
#define QDQ_HOST_THREADS 1
#else
#include <boost/context/fiber.hpp>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#endif

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

// Called with true before a launch and false after it, when set: the emulated device opens its
// memory to the host only then (cuda/emulated/device_memory.cpp). Unset in the kernel tests,
// whose "device" memory is plain host memory.
inline void (*device_access)(bool open) = nullptr;

[[noreturn]] inline void fail(const std::string& what) {
    std::fprintf(stderr, "cuda/host_threads.h: %s\n", what.c_str());
    std::abort();  // as a device-side assert ends the kernel
}

#if defined(QDQ_HOST_THREADS)

using Barrier = std::barrier<>;
inline void arrive_and_wait(Barrier& b) { b.arrive_and_wait(); }

#else

// A barrier among fibers: the last to arrive opens the next generation; the others wait (the
// scheduler skips them) until it has opened.
struct Barrier {
    explicit Barrier(std::ptrdiff_t n) : expected((unsigned)n) {}
    unsigned expected, arrived = 0, generation = 0;
};

// A fiber's stack, kept between launches: given to each new fiber of its thread's slot, never
// freed by the fiber.
struct KeptStack {
    char* base;
    size_t size;
    boost::context::stack_context allocate() {
        boost::context::stack_context stack;
        stack.size = size;
        stack.sp = base + size;  // the top: stacks grow down
        return stack;
    }
    void deallocate(boost::context::stack_context&) noexcept {}
};

struct Fiber {
    boost::context::fiber context;  // where the thread waits; empty before its start and once it has ended
    std::unique_ptr<char[]> stack;
    const Barrier* waiting_on = nullptr;
    unsigned waiting_generation = 0;
    bool done = false;
};

constexpr size_t kFiberStack = 256 * 1024;

// The running block's fibers and the scheduler's context, on the launching thread.
struct Fibers {
    std::vector<Fiber> fibers;  // grown to the largest block, stacks kept between launches
    boost::context::fiber scheduler;  // where the launching thread waits while a fiber runs
    Fiber* current = nullptr;
    void (*body)(void*) = nullptr;
    void* body_arg = nullptr;
    void* fake_stack = nullptr;                              // AddressSanitizer's, of the scheduler
    const void* scheduler_stack = nullptr;                   // its bounds, for the switches back
    size_t scheduler_stack_size = 0;
};

inline thread_local Fibers fibers;

// AddressSanitizer must be told of each switch between stacks (a no-op without it).
inline void start_switch(void** fake_stack, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
    (void)fake_stack, (void)bottom, (void)size;
#endif
}
inline void finish_switch(void* fake_stack, const void** bottom, size_t* size) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(fake_stack, bottom, size);
#else
    (void)fake_stack, (void)bottom, (void)size;
#endif
}

// Back to the scheduler from the current fiber; returns when the scheduler resumes it.
inline void yield_to_scheduler() {
    Fibers& f = fibers;
    void* fake = nullptr;
    start_switch(&fake, f.scheduler_stack, f.scheduler_stack_size);
    f.scheduler = std::move(f.scheduler).resume();
    finish_switch(fake, nullptr, nullptr);
}

inline void arrive_and_wait(Barrier& b) {
    const unsigned generation = b.generation;
    if (++b.arrived == b.expected) {
        b.arrived = 0;
        ++b.generation;
        return;
    }
    fibers.current->waiting_on = &b;
    fibers.current->waiting_generation = generation;
    yield_to_scheduler();
}

// A CUDA thread's flow of control: the body, then back to the scheduler for good.
inline boost::context::fiber fiber_entry(boost::context::fiber&& scheduler) {
    Fibers& f = fibers;
    f.scheduler = std::move(scheduler);
    finish_switch(nullptr, &f.scheduler_stack, &f.scheduler_stack_size);
    f.body(f.body_arg);
    f.current->done = true;
    start_switch(nullptr, f.scheduler_stack, f.scheduler_stack_size);  // this stack is left for good
    return std::move(f.scheduler);
}

// body(arg) once per thread of a block of `threads`, as fibers: each runs until it waits at a
// barrier or ends, in thread order, round after round, until all have ended.
inline void run_block_fibers(unsigned threads, void (*body)(void*), void* arg) {
    Fibers& f = fibers;
    if (f.fibers.size() < threads) f.fibers.resize(threads);
    f.body = body;
    f.body_arg = arg;
    for (unsigned t = 0; t < threads; ++t) {
        Fiber& fiber = f.fibers[t];
        if (!fiber.stack) fiber.stack.reset(new char[kFiberStack]);  // untouched until used
        KeptStack stack{fiber.stack.get(), kFiberStack};
        fiber.context = boost::context::fiber(std::allocator_arg, stack, fiber_entry);
        fiber.done = false;
        fiber.waiting_on = nullptr;
    }
    for (unsigned finished = 0; finished < threads;) {
        bool progress = false;
        for (unsigned t = 0; t < threads; ++t) {
            Fiber& fiber = f.fibers[t];
            if (fiber.done || (fiber.waiting_on && fiber.waiting_on->generation == fiber.waiting_generation)) continue;
            fiber.waiting_on = nullptr;
            threadIdx = dim3(t);
            f.current = &fiber;
            start_switch(&f.fake_stack, fiber.stack.get(), kFiberStack);
            fiber.context = std::move(fiber.context).resume();
            finish_switch(f.fake_stack, nullptr, nullptr);
            progress = true;
            finished += fiber.done;
        }
        if (!progress) fail("deadlock: a barrier that not every thread of the block reaches");
    }
    f.current = nullptr;
}

#endif

// What the threads of the running block share besides __shared__ memory.
struct Block {
    explicit Block(unsigned threads) : sync((std::ptrdiff_t)threads), lanes(threads) {
        for (unsigned w = 0; w < (threads + kWarp - 1) / kWarp; ++w)
            warps.push_back(std::make_unique<Barrier>((std::ptrdiff_t)std::min(kWarp, threads - w * kWarp)));
    }
    Barrier sync;
    std::vector<std::unique_ptr<Barrier>> warps;
    std::vector<double> lanes;  // one per thread: what a shuffle exchanges (a float or a double, exactly)
};

inline Block* running = nullptr;

}  // namespace qdq::cuda_host

inline void __syncthreads() { qdq::cuda_host::arrive_and_wait(qdq::cuda_host::running->sync); }

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
    arrive_and_wait(*running->warps[warp]);
    const T out = (T)running->lanes[partner];
    arrive_and_wait(*running->warps[warp]);  // before any lane writes its slot again
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
inline unsigned long long atomicMax(unsigned long long* address, unsigned long long value) {
    std::atomic_ref<unsigned long long> a(*address);
    unsigned long long old = a.load();
    while (old < value && !a.compare_exchange_weak(old, value)) {}
    return old;
}

namespace qdq::cuda {

// kernel<<<grid, block>>>(args...): every block in turn, each thread of it its own flow of
// control (one-dimensional grids and blocks, as every kernel here uses).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
    if (block.y != 1 || block.z != 1 || grid.y != 1 || grid.z != 1) cuda_host::fail("launch: one-dimensional only");
    if (block.x == 0 || block.x > 1024) cuda_host::fail("launch: blockDim.x must be in [1, 1024]");
    ++launch_count;
    gridDim = grid;
    blockDim = block;
    if (cuda_host::device_access) cuda_host::device_access(true);
    auto run_thread = [&] { kernel(args...); };
    for (unsigned b = 0; b < grid.x; ++b) {
        blockIdx = dim3(b);
        cuda_host::Block shared(block.x);
        cuda_host::running = &shared;
#if defined(QDQ_HOST_THREADS)
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < block.x; ++t)
            threads.emplace_back([&, t] {
                threadIdx = dim3(t);
                run_thread();
            });
        for (std::thread& t : threads) t.join();
#else
        cuda_host::run_block_fibers(block.x, [](void* f) { (*static_cast<decltype(run_thread)*>(f))(); }, &run_thread);
#endif
        cuda_host::running = nullptr;
    }
    if (cuda_host::device_access) cuda_host::device_access(false);
}

}  // namespace qdq::cuda
