// The emulated device (QDQ_CUDA=EMULATED, a test build): device memory is host memory, copies
// are memmove, and the kernels of cuda/kernels/*.cuh run on host threads (cuda/host_threads.h,
// emulated/kernels.cpp). Every path a GPU run takes through the backend (tensors on
// Device::CUDA, the ops' dispatch, copies both ways, qdqtrain selftest) then runs where there is
// no GPU; only the hardware is missing.
//
// On a GPU, host code that reads a device pointer crashes or reads garbage. So that the same
// mistake fails here too, each allocation is its own mapping, inaccessible (PROT_NONE) except
// while a kernel, a copy, a memset or the GEMM runs: a stray host read or write is a SIGSEGV at
// the line that made it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "cuda/backend.h"
#include "cuda/emulated/device_access.h"
#include "cuda/host_threads.h"

namespace qdq::cuda {

namespace {

struct Mappings {
    std::mutex mutex;
    std::map<void*, size_t> live;  // address -> mapped bytes
    int open = 0;                  // nesting depth of open_device_memory
};

Mappings& mappings() {
    static Mappings m;
    return m;
}

size_t mapped_bytes(size_t bytes) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + page - 1) / page * page + (bytes == 0 ? page : 0);
}

void protect(void* ptr, size_t bytes, bool open) {
    if (mprotect(ptr, bytes, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
        throw std::runtime_error("emulated device: mprotect failed");
}

void set_access(bool open) {
    Mappings& m = mappings();
    std::lock_guard lock(m.mutex);
    if (open ? m.open++ > 0 : --m.open > 0) return;
    for (auto& [ptr, bytes] : m.live) protect(ptr, bytes, open);
}

// Kernel launches open the memory too.
const bool launches_open_memory = [] {
    cuda_host::device_access = set_access;
    return true;
}();

}  // namespace

DeviceMemoryAccess::DeviceMemoryAccess() { set_access(true); }
DeviceMemoryAccess::~DeviceMemoryAccess() { set_access(false); }

bool built_with_cuda() { return true; }
int device_count() { return 1; }
std::string device_description() { return "emulated CUDA device: the kernels on host threads (a test build)"; }
std::string runtime_versions() { return "driver emulated, runtime emulated"; }

void* device_alloc(size_t bytes) {
    (void)launches_open_memory;
    const size_t mapped = mapped_bytes(bytes);
    Mappings& m = mappings();
    std::lock_guard lock(m.mutex);
    void* ptr = mmap(nullptr, mapped, m.open > 0 ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) throw std::runtime_error("emulated device: out of memory");
    m.live[ptr] = mapped;
    return ptr;
}

void device_free(void* ptr) {
    if (!ptr) return;
    Mappings& m = mappings();
    std::lock_guard lock(m.mutex);
    auto it = m.live.find(ptr);
    if (it == m.live.end()) return;
    munmap(ptr, it->second);
    m.live.erase(it);
}

void memset_zero(void* ptr, size_t bytes) {
    DeviceMemoryAccess access;
    std::memset(ptr, 0, bytes);
}

void copy(void* dst, bool, const void* src, bool, size_t bytes) {
    DeviceMemoryAccess access;
    std::memmove(dst, src, bytes);
}

}  // namespace qdq::cuda
