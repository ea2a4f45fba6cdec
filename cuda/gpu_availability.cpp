#include "cuda/gpu_availability.h"

namespace qdq::cuda {

std::string cuda_version(int version) { return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10); }

std::string unusable_gpu_reason(const DeviceQueryError& error) {
    if (error.name == "cudaErrorNoDevice") return "";
    // The runtime reports a missing driver library as an insufficient driver; only a driver
    // that answers with its version is one that is installed and too old.
    if (error.name == "cudaErrorInsufficientDriver" && error.driver_version == 0) return "";
    const std::string driver = error.driver_version > 0 ? "driver " + cuda_version(error.driver_version) : "no driver version";
    return error.name + ": " + error.text + " (" + driver + ", runtime " + cuda_version(error.runtime_version) + ")";
}

}  // namespace qdq::cuda
