// qdqtrain selftest (stages/selftest.h) as a user with a GPU runs it. Built against the emulated
// device (QDQ_CUDA=EMULATED: the kernels on the host) it must find every kernel in agreement
// with the CPU, which checks the self-test's own plumbing (buffers, copies, comparisons) where
// no GPU is; against no device it must say so and exit 77, and against a GPU that cannot be
// used (the emulated device under an old driver) fail naming the driver's error.
#include <gtest/gtest.h>

#include <iostream>
#include <sstream>

#include "cuda/backend.h"
#include "stages/selftest.h"
#include "tests/support/scoped_environment.h"

using namespace qdq;

TEST(Selftest, ChecksEveryKernelOrSaysThereIsNoDevice) {
    std::ostringstream out;
    const int code = run_selftest(out, "");
    const std::string text = out.str();
    if (cuda::device_count() == 0) {
        EXPECT_EQ(code, kSelftestNoDevice) << text;
        EXPECT_NE(text.find("no CUDA device"), std::string::npos) << text;
        GTEST_SKIP() << "skipped: no CUDA device (" << cuda::device_description() << ")";
    }
    std::cout << text;  // each check's worst ratio to its tolerance, for the log
    EXPECT_EQ(code, 0) << text;
    EXPECT_EQ(text.find("MISMATCH"), std::string::npos) << text;
    EXPECT_NE(text.find("every check agrees"), std::string::npos) << text;
}

TEST(Selftest, AGpuThatCannotBeUsedFailsNamingTheDriversError) {
    if (cuda::device_description().find("emulated CUDA device") == std::string::npos)
        GTEST_SKIP() << "skipped: needs the emulated device (" << cuda::device_description() << ")";
    const qdq::testing::ScopedEnvironment old_driver("QDQ_EMULATED_DRIVER", "12020");
    std::ostringstream out;
    const int code = run_selftest(out, "");
    EXPECT_EQ(code, 1) << out.str();
    for (const char* part : {"cudaErrorInsufficientDriver", "driver 12.2, runtime 13.0", "cannot be used"})
        EXPECT_NE(out.str().find(part), std::string::npos) << part << " in: " << out.str();
}
