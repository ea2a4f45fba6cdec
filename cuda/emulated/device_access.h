// While one of these lives, the emulated device's memory is open to host code
// (cuda/emulated/device_memory.cpp keeps it closed otherwise). For the emulated backend's own
// host work only: copies, memsets, and the GEMM's host reference.
#pragma once

namespace qdq::cuda {

struct DeviceMemoryAccess {
    DeviceMemoryAccess();
    ~DeviceMemoryAccess();
    DeviceMemoryAccess(const DeviceMemoryAccess&) = delete;
    DeviceMemoryAccess& operator=(const DeviceMemoryAccess&) = delete;
};

}  // namespace qdq::cuda
