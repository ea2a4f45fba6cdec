// A device copy of a host array, or uninitialised device memory, freed with it: the scratch
// buffers (counters, maxima as bits, 64-bit counts, partial sums) that the backend's kernels
// take besides tensors.
#pragma once

#include <cstddef>
#include <vector>

#include "cuda/backend.h"

namespace qdq::cuda {

// DeviceArray's tag for memory that a kernel fills before anything reads it: no copy from the
// host, so no wait for the device.
struct Uninitialized {};

template <typename T>
struct DeviceArray {
    T* ptr = nullptr;
    size_t n = 0;
    explicit DeviceArray(const std::vector<T>& host) : n(host.size()) {
        ptr = static_cast<T*>(device_alloc(n * sizeof(T)));
        copy(ptr, true, host.data(), false, n * sizeof(T));
    }
    DeviceArray(size_t count, Uninitialized) : n(count) { ptr = static_cast<T*>(device_alloc(n * sizeof(T))); }
    ~DeviceArray() { device_free(ptr); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    std::vector<T> host() const {
        std::vector<T> out(n);
        copy(out.data(), false, ptr, true, n * sizeof(T));
        return out;
    }
};

}  // namespace qdq::cuda
