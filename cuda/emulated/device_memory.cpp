// The emulated device (QDQ_CUDA=EMULATED, a test build): device memory is host memory, copies
// are memmove, and the kernels of cuda/kernels/*.cuh run on host threads (cuda/host_threads.h;
// cuda/CMakeLists.txt compiles the .cu launchers as C++). Every path a GPU run takes through the
// backend (tensors on Device::CUDA, the ops' dispatch, copies both ways, qdqtrain selftest) then
// runs where there is no GPU; only the hardware is missing.
//
// On a GPU, host code that reads a device pointer crashes or reads garbage. So that the same
// mistake fails here too, device memory is carved from one reserved mapping that is closed
// (PROT_NONE) except while a kernel, a copy, a memset or the GEMM runs: a stray host read or
// write is a SIGSEGV at the line that made it. One mapping, so that opening and closing is one
// system call whatever the number of tensors.
//
// The machine it emulates can be set from the environment, for the tests of what a run does on
// other machines: QDQ_EMULATED_DEVICES GPUs (1 unless set), of which a process selects one (a
// data-parallel rank its own) and keeps that one's memory in its arena; QDQ_EMULATED_DRIVER, a
// driver version that, below the runtime's 13000, makes the GPU one that cannot be used, as an
// old driver does.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "cuda/backend.h"
#include "cuda/block_cache.h"
#include "cuda/emulated/device_access.h"
#include "cuda/gpu_availability.h"
#include "cuda/host_threads.h"
#include "cuda/launch_count.h"

namespace qdq::cuda {

namespace {

constexpr size_t kReserved = size_t(1) << 38;  // address space only (MAP_NORESERVE)

// A bump allocator over the mapping, freed blocks reused by size class as on a GPU.
struct Arena {
    std::mutex mutex;
    char* base = nullptr;
    size_t used = 0;                           // bytes bumped so far
    size_t opened = 0;                         // bytes currently readable (a page multiple)
    int open = 0;                              // nesting depth of DeviceMemoryAccess and launches
    BlockCache blocks;
    int device = 0;                            // the selected one of QDQ_EMULATED_DEVICES

    Arena() {
        void* p = mmap(nullptr, kReserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("emulated device: cannot reserve its address space");
        base = static_cast<char*>(p);
    }

    size_t page_end(size_t bytes) const {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        return (bytes + page - 1) / page * page;
    }
    void protect(size_t begin, size_t end, bool readable) const {
        if (end > begin && mprotect(base + begin, end - begin, readable ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
            throw std::runtime_error("emulated device: mprotect failed");
    }
    // Opens or closes everything bumped so far; called with the mutex held.
    void set_open(bool readable) {
        if (readable ? open++ > 0 : --open > 0) return;
        opened = readable ? page_end(used) : 0;
        protect(0, page_end(used), readable);
    }
};

Arena& arena() {
    static Arena a;
    return a;
}

void set_access(bool open) {
    Arena& a = arena();
    std::lock_guard lock(a.mutex);
    a.set_open(open);
}

// Kernel launches open the memory too.
const bool launches_open_memory = [] {
    cuda_host::device_access = set_access;
    return true;
}();

constexpr int kRuntimeVersion = 13000;

int environment_int(const char* name, int unset) {
    const char* value = std::getenv(name);
    return value && *value ? std::atoi(value) : unset;
}

std::string unusable_emulated_gpu() {
    const int driver = environment_int("QDQ_EMULATED_DRIVER", kRuntimeVersion);
    if (driver >= kRuntimeVersion) return "";
    return unusable_gpu_reason({"cudaErrorInsufficientDriver",
                                "CUDA driver version is insufficient for CUDA runtime version", driver, kRuntimeVersion});
}

}  // namespace

DeviceMemoryAccess::DeviceMemoryAccess() { set_access(true); }
DeviceMemoryAccess::~DeviceMemoryAccess() { set_access(false); }

bool built_with_cuda() { return true; }
int device_count() { return unusable_emulated_gpu().empty() ? environment_int("QDQ_EMULATED_DEVICES", 1) : 0; }
std::string unusable_gpu() { return unusable_emulated_gpu(); }
int compute_capability() { return 80; }  // what it emulates: cuBLAS's bf16 GemmEx is there
std::string runtime_versions() { return "driver emulated, runtime emulated"; }

std::string device_description() {
    const std::string unusable = unusable_emulated_gpu();
    if (!unusable.empty()) return "emulated CUDA backend; the GPU cannot be used: " + unusable;
    Arena& a = arena();
    std::lock_guard lock(a.mutex);
    return "emulated CUDA device " + std::to_string(a.device) + ": the kernels on the host (a test build)";
}

LockedBlockCache locked_block_cache() {
    Arena& a = arena();
    return {std::unique_lock(a.mutex), a.blocks};
}

void select_device(int index) {
    const int chosen = index % device_count();
    Arena& a = arena();
    std::lock_guard lock(a.mutex);
    check_device_switch(a.blocks, a.device, chosen);
    a.device = chosen;
}

void* device_alloc(size_t bytes) {
    (void)launches_open_memory;
    const size_t size = block_size_class(bytes);
    Arena& a = arena();
    std::lock_guard lock(a.mutex);
    void* ptr = a.blocks.take(size);
    if (!ptr) {
        ++a.blocks.made;
        if (a.used + size > kReserved) throw std::runtime_error("emulated device: out of memory");
        ptr = a.base + a.used;
        a.used += size;
        if (a.open > 0) {  // memory bumped while open is opened too
            a.protect(a.opened, a.page_end(a.used), true);
            a.opened = a.page_end(a.used);
        }
    }
    a.blocks.hand_out(ptr, size);
    return ptr;
}

void device_free(void* ptr) {
    if (!ptr) return;
    Arena& a = arena();
    std::lock_guard lock(a.mutex);
    a.blocks.give_back(ptr);
}

void memset_zero(void* ptr, size_t bytes) {
    DeviceMemoryAccess access;
    std::memset(ptr, 0, bytes);
}

namespace {
std::atomic<int64_t> host_wait_count{0};
}  // namespace

// Counted as a GPU's copies would wait, so that the counts asserted here are a real device's.
int64_t host_waits() { return host_wait_count; }
int64_t launches() { return launch_count; }

void copy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes) {
    if (dst_on_device != src_on_device) ++host_wait_count;
    const unsigned long long* fault = src_on_device && !dst_on_device ? range_fault_to_read() : nullptr;
    unsigned long long fault_value = 0;
    {
        DeviceMemoryAccess access;
        std::memmove(dst, src, bytes);
        if (fault) fault_value = *fault;  // read with the copy, as a GPU's queued read (device_memory.cu)
    }
    if (fault) report_range_fault(fault_value);
}

}  // namespace qdq::cuda
