// Launching the qdqtrain binary the test was built against (QDQTRAIN_PATH) as two MPI ranks on
// this machine, for the data-parallel tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/support/run_command.h"

namespace qdq::testing {

// Open MPI refuses root without the flag; --oversubscribe lets two ranks share fewer cores. In
// the sanitizer build the ranks run without leak detection: Open MPI keeps allocations past
// MPI_Finalize in components it has unloaded, whose stacks no suppression can name; the same
// code runs leak-checked in one process in the other suites. (Elsewhere the variable is unread.)
inline const char* kMpirun =
    "mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -x ASAN_OPTIONS=detect_leaks=0 -np 2 ";

// True (the test returns) where mpirun is missing; under CI=true that is a failure too.
inline bool skip_without_mpirun() {
    if (std::system("mpirun --version > /dev/null 2>&1") == 0) return false;
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") ADD_FAILURE() << "mpirun is not installed (scripts/setup.sh); CI=true";
    return true;
}

inline Process train_on_two_ranks(const std::string& config) {
    return run_command(kMpirun + std::string(QDQTRAIN_PATH) + " train " + config);
}

}  // namespace qdq::testing
