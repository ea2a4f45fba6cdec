// Device allocation, copies and device queries.
#include "cuda/backend.h"
#include "cuda/check.h"

namespace qdq::cuda {

bool built_with_cuda() { return true; }

int device_count() {
    int count = 0;
    // No driver or no device is an answer (zero), not an error.
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return count;
}

std::string device_description() {
    if (device_count() == 0) return "CUDA backend built, no CUDA device present";
    int device = 0;
    QDQ_CUDA_CHECK(cudaGetDevice(&device));
    cudaDeviceProp prop{};
    QDQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    return "device " + std::to_string(device) + ": " + prop.name + " (compute capability " + std::to_string(prop.major) +
           "." + std::to_string(prop.minor) + ")";
}

void select_device(int index) { QDQ_CUDA_CHECK(cudaSetDevice(index % device_count())); }

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
    auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
    return "driver " + version(driver) + ", runtime " + version(runtime);
}

void* device_alloc(size_t bytes) {
    void* ptr = nullptr;
    QDQ_CUDA_CHECK(cudaMalloc(&ptr, bytes ? bytes : 1));
    return ptr;
}

void device_free(void* ptr) { cudaFree(ptr); }

void memset_zero(void* ptr, size_t bytes) { QDQ_CUDA_CHECK(cudaMemset(ptr, 0, bytes)); }

void copy(void* dst, bool dst_on_device, const void* src, bool src_on_device, size_t bytes) {
    cudaMemcpyKind kind = dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice
                                                         : cudaMemcpyHostToDevice)
                                        : (src_on_device ? cudaMemcpyDeviceToHost
                                                         : cudaMemcpyHostToHost);
    QDQ_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
}

}  // namespace qdq::cuda
