// The emulated device (QDQ_CUDA=EMULATED, a test build): device memory is host memory, copies
// are memcpy, and the kernels of cuda/kernels/*.cuh run on host threads (cuda/host_threads.h,
// emulated/kernels.cpp). Every path a GPU run takes through the backend (tensors on
// Device::CUDA, the ops' dispatch, copies both ways, qdqtrain selftest) then runs where there is
// no GPU; only the hardware is missing.
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cuda/backend.h"

namespace qdq::cuda {

bool built_with_cuda() { return true; }
int device_count() { return 1; }
std::string device_description() { return "emulated CUDA device: the kernels on host threads (a test build)"; }
std::string runtime_versions() { return "driver emulated, runtime emulated"; }

void* device_alloc(size_t bytes) {
    void* ptr = std::malloc(bytes ? bytes : 1);
    if (!ptr) throw std::runtime_error("emulated device: out of memory");
    return ptr;
}

void device_free(void* ptr) { std::free(ptr); }
void memset_zero(void* ptr, size_t bytes) { std::memset(ptr, 0, bytes); }
void copy(void* dst, bool, const void* src, bool, size_t bytes) { std::memmove(dst, src, bytes); }

}  // namespace qdq::cuda
