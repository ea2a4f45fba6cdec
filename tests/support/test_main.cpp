// Every test binary's main: GoogleTest's, except that a run QDQ_CPU forces to this CPU's own
// level or above it exits with 77, which ctest reports as skipped (tests/CMakeLists.txt's
// qdq_cpu_level_tests): the plain run covers this CPU's level, and a level it lacks cannot run.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>

#include "autograd/cpu_level.h"

int main(int argc, char** argv) {
    const std::optional<qdq::CpuLevel> asked = qdq::asked_cpu_level();
    if (asked && *asked >= qdq::detected_cpu_level()) {
        std::printf("skipped: QDQ_CPU=%s, and this CPU's level is %s\n", qdq::cpu_level_name(*asked),
                    qdq::cpu_level_name(qdq::detected_cpu_level()));
        return 77;
    }
    testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
