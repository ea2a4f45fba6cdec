// What a failed device query means (cuda/gpu_availability.h), for the runtime's answers on the
// machines a run meets: no driver installed and no device send it to the CPU without a word; an
// installed driver older than the runtime, or one whose library and kernel module disagree, is
// a GPU that cannot be used, named with the error and both versions.
#include <gtest/gtest.h>

#include <string>

#include "cuda/gpu_availability.h"

using namespace qdq::cuda;

namespace {

const char* kInsufficient = "CUDA driver version is insufficient for CUDA runtime version";

}  // namespace

TEST(GpuAvailability, NoDriverAndNoDeviceMeanThereIsNoGpu) {
    EXPECT_EQ(unusable_gpu_reason({"cudaErrorInsufficientDriver", kInsufficient, 0, 13000}), "");
    EXPECT_EQ(unusable_gpu_reason({"cudaErrorNoDevice", "no CUDA-capable device is detected", 13000, 13000}), "");
}

TEST(GpuAvailability, AnOldOrMismatchedDriverIsAGpuThatCannotBeUsed) {
    EXPECT_EQ(unusable_gpu_reason({"cudaErrorInsufficientDriver", kInsufficient, 12020, 13000}),
              std::string("cudaErrorInsufficientDriver: ") + kInsufficient + " (driver 12.2, runtime 13.0)");
    const std::string mismatch = unusable_gpu_reason(
        {"cudaErrorSystemDriverMismatch", "system has unsupported display driver / cuda driver combination", 0, 13000});
    EXPECT_EQ(mismatch.rfind("cudaErrorSystemDriverMismatch: ", 0), 0u) << mismatch;
    EXPECT_NE(mismatch.find("no driver version, runtime 13.0"), std::string::npos) << mismatch;
}

TEST(GpuAvailability, VersionsReadAsMajorDotMinor) {
    EXPECT_EQ(cuda_version(13000), "13.0");
    EXPECT_EQ(cuda_version(12090), "12.9");
    EXPECT_EQ(cuda_version(11080), "11.8");
}
