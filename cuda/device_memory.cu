// Device allocation (through cuda/block_cache.h), copies and device queries.
#include <atomic>
#include <mutex>

#include "cuda/backend.h"
#include "cuda/block_cache.h"
#include "cuda/check.h"
#include "cuda/gpu_availability.h"
#include "cuda/launch_count.h"

namespace qdq::cuda {

bool built_with_cuda() { return true; }

namespace {

// cudaGetDeviceCount's answer: the count, or why there is no usable GPU (cuda/gpu_availability.h).
struct DeviceQuery {
    int count = 0;
    std::string unusable;
};

DeviceQuery query_devices() {
    DeviceQuery query;
    const cudaError_t status = cudaGetDeviceCount(&query.count);
    if (status == cudaSuccess) return query;
    cudaGetLastError();
    DeviceQueryError error{cudaGetErrorName(status), cudaGetErrorString(status)};
    cudaDriverGetVersion(&error.driver_version);
    cudaRuntimeGetVersion(&error.runtime_version);
    return {0, unusable_gpu_reason(error)};
}

}  // namespace

int device_count() { return query_devices().count; }
std::string unusable_gpu() { return query_devices().unusable; }

std::string device_description() {
    const DeviceQuery query = query_devices();
    if (!query.unusable.empty()) return "CUDA backend built; the GPU cannot be used: " + query.unusable;
    if (query.count == 0) return "CUDA backend built, no CUDA device present";
    int device = 0;
    QDQ_CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    QDQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    return "device " + std::to_string(device) + ": " + prop.name + " (compute capability " + std::to_string(prop.major) +
           "." + std::to_string(prop.minor) + ")";
}

int compute_capability() {
    int device = 0, major = 0, minor = 0;
    QDQ_CUDA_CHECK(cudaGetDevice(&device));
    QDQ_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    QDQ_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return major * 10 + minor;
}

std::string runtime_versions() {
    int driver = 0, runtime = 0;
    QDQ_CUDA_CHECK(cudaDriverGetVersion(&driver));
    QDQ_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    return "driver " + cuda_version(driver) + ", runtime " + cuda_version(runtime);
}

namespace {

struct DeviceBlocks {
    std::mutex mutex;
    BlockCache cache;
};

// Never destroyed: a tensor freed during static destruction still finds it.
DeviceBlocks& blocks() {
    static DeviceBlocks* b = new DeviceBlocks;
    return *b;
}

}  // namespace

LockedBlockCache locked_block_cache() {
    DeviceBlocks& b = blocks();
    return {std::unique_lock(b.mutex), b.cache};
}

void select_device(int index) {
    const int chosen = index % device_count();
    int current = 0;
    QDQ_CUDA_CHECK(cudaGetDevice(&current));
    DeviceBlocks& b = blocks();
    std::lock_guard lock(b.mutex);
    check_device_switch(b.cache, current, chosen);
    QDQ_CUDA_CHECK(cudaSetDevice(chosen));
}

// Every kernel, copy and cuBLAS call runs on the default stream, so a block reused after
// device_free is written only after the work that read it: no event is needed.
void* device_alloc(size_t bytes) {
    const size_t size = block_size_class(bytes);
    DeviceBlocks& b = blocks();
    std::lock_guard lock(b.mutex);
    void* ptr = b.cache.take(size);
    if (!ptr) {
        ++b.cache.made;
        if (cudaMalloc(&ptr, size) != cudaSuccess) {
            cudaGetLastError();  // out of memory, most likely: release what the cache holds, then once more
            for (void* unused : b.cache.drain()) cudaFree(unused);
            QDQ_CUDA_CHECK(cudaMalloc(&ptr, size));
        }
    }
    b.cache.hand_out(ptr, size);
    return ptr;
}

void device_free(void* ptr) {
    if (!ptr) return;
    DeviceBlocks& b = blocks();
    std::lock_guard lock(b.mutex);
    b.cache.give_back(ptr);
}

void memset_zero(void* ptr, size_t bytes) { QDQ_CUDA_CHECK(cudaMemset(ptr, 0, bytes)); }

namespace {
std::atomic<int64_t> host_wait_count{0};
}  // namespace

int64_t host_waits() { return host_wait_count; }
int64_t launches() { return launch_count; }

namespace {

// Where a copy to the host reads the range-fault word (cuda/range_fault.cu): page-locked, so
// that the read can be queued ahead of the copy and the copy's one wait covers both.
unsigned long long* pinned_fault_word() {
    static unsigned long long* word = [] {
        void* p = nullptr;
        QDQ_CUDA_CHECK(cudaMallocHost(&p, sizeof(unsigned long long)));
        return static_cast<unsigned long long*>(p);
    }();
    return word;
}

std::mutex fault_read_mutex;  // one reader of the pinned word at a time

}  // namespace

void copy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes) {
    if (dst_on_device != src_on_device) ++host_wait_count;  // cudaMemcpy returns once the device is done
    cudaMemcpyKind kind = dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice
                                                         : cudaMemcpyHostToDevice)
                                        : (src_on_device ? cudaMemcpyDeviceToHost
                                                         : cudaMemcpyHostToHost);
    const unsigned long long* fault = kind == cudaMemcpyDeviceToHost ? range_fault_to_read() : nullptr;
    if (!fault) {
        QDQ_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
        return;
    }
    std::lock_guard lock(fault_read_mutex);
    unsigned long long* word = pinned_fault_word();
    // Same stream, queued first: when cudaMemcpy returns, the word has arrived as well.
    QDQ_CUDA_CHECK(cudaMemcpyAsync(word, fault, sizeof *word, cudaMemcpyDeviceToHost, 0));
    QDQ_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
    report_range_fault(*word);
}

}  // namespace qdq::cuda
