// What a failed device query means for a run. No driver installed, or a driver without a
// device, is an answer: there is no GPU here, and a run goes to the CPU as Hugging Face's
// Trainer goes. Any other failure is a GPU that is there and cannot be used (a driver older
// than the runtime this binary carries, a driver whose kernel module and library disagree): a
// run must not pass over that silently, so the backend keeps the reason and
// trainers/run_device.cpp refuses the run with it.
#pragma once

#include <string>

namespace qdq::cuda {

// cudaGetDeviceCount's error, as the runtime names and explains it, and the versions beside it
// (cudaDriverGetVersion gives 0 where no driver library is installed).
struct DeviceQueryError {
    std::string name;  // "cudaErrorInsufficientDriver"
    std::string text;  // "CUDA driver version is insufficient for CUDA runtime version"
    int driver_version = 0;
    int runtime_version = 0;
};

// "" when the error means there is no GPU; else why the GPU cannot be used, naming the error.
std::string unusable_gpu_reason(const DeviceQueryError& error);

// "13.0" for the runtime's 13000.
std::string cuda_version(int version);

}  // namespace qdq::cuda
