// Reuse of device blocks: a freed block goes to a free list of its size class and the next
// allocation of that class takes it, as PyTorch's CUDA caching allocator does. On a GPU
// cudaMalloc costs tens of microseconds and cudaFree waits for the whole device, and a training
// step allocates thousands of tensors: without reuse a BERT-base step on an H100 took 0.7 s.
// Blocks are never split or merged. The classes are four per octave, so a block wastes at most
// a quarter of itself (less than kMinBlock below 1 KiB), and batches of varying sequence length
// still find one another's blocks.
// Not thread-safe: the caller holds its own lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace qdq::cuda {

constexpr size_t kMinBlock = 256;  // cudaMalloc's alignment, so a bump allocator keeps it too

// The size a block of `bytes` is given: a multiple of a quarter of its octave, at least kMinBlock.
inline size_t block_size_class(size_t bytes) {
    const size_t b = std::max(bytes, kMinBlock);
    size_t octave = kMinBlock;  // the largest power of two not above b (nvcc builds this as C++17)
    while (octave <= b / 2) octave *= 2;
    const size_t step = std::max(kMinBlock, octave / 4);
    return (b + step - 1) / step * step;
}

struct BlockCache {
    std::unordered_map<void*, size_t> in_use;               // block handed out -> its size class
    std::unordered_map<size_t, std::vector<void*>> free;     // size class -> blocks given back
    size_t in_use_bytes = 0;  // of the blocks handed out
    size_t peak_bytes = 0;    // the most in_use_bytes since the last reset_peak()
    int64_t made = 0;         // blocks its owner made because take() had none

    // A freed block of this size class, or nullptr when the caller must make one.
    void* take(size_t size_class) {
        std::vector<void*>& blocks = free[size_class];
        if (blocks.empty()) return nullptr;
        void* ptr = blocks.back();
        blocks.pop_back();
        return ptr;
    }
    void hand_out(void* ptr, size_t size_class) {
        in_use[ptr] = size_class;
        in_use_bytes += size_class;
        peak_bytes = std::max(peak_bytes, in_use_bytes);
    }
    void reset_peak() { peak_bytes = in_use_bytes; }
    // Back onto its free list; false for a pointer this cache did not hand out.
    bool give_back(void* ptr) {
        auto it = in_use.find(ptr);
        if (it == in_use.end()) return false;
        free[it->second].push_back(ptr);
        in_use_bytes -= it->second;
        in_use.erase(it);
        return true;
    }
    // Every free block, the lists emptied: for the caller to release when memory runs out.
    std::vector<void*> drain() {
        std::vector<void*> all;
        for (auto& [size_class, blocks] : free) all.insert(all.end(), blocks.begin(), blocks.end());
        free.clear();
        return all;
    }
    // Bytes of every block it holds, handed out or free.
    size_t bytes_held() const {
        size_t bytes = in_use_bytes;
        for (const auto& [size_class, blocks] : free) bytes += size_class * blocks.size();
        return bytes;
    }
};

// The backend's block cache, under its lock for as long as this lives: what backend.h's
// counters read, alike for the GPU and the emulated device (cuda/block_counts.cpp). Each
// backend's device memory defines it.
struct LockedBlockCache {
    std::unique_lock<std::mutex> lock;
    BlockCache& cache;
};
LockedBlockCache locked_block_cache();

// A process uses one device, chosen before its first allocation (each data-parallel rank its
// own). A block is memory of the device it was made on, which kernels and cuBLAS on another
// device cannot use, and the cache would hand it out there: so moving to another device while
// the cache holds any block is refused, naming what was allocated too early.
inline void check_device_switch(const BlockCache& cache, int from, int to) {
    if (from == to || cache.bytes_held() == 0) return;
    throw std::logic_error("selecting device " + std::to_string(to) + ": device " + std::to_string(from) + " already holds " +
                           std::to_string(cache.bytes_held()) +
                           " bytes of this process's tensors, allocated before the device was chosen; a process "
                           "selects its device before anything is allocated");
}

}  // namespace qdq::cuda
