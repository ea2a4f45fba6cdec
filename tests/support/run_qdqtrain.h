// Runs the qdqtrain binary the test was built against (QDQTRAIN_PATH, set by tests/CMakeLists.txt)
// with `args`.
#pragma once

#include <string>

#include "tests/support/run_command.h"

namespace qdq::testing {

inline Process run_qdqtrain(const std::string& args) { return run_command(std::string(QDQTRAIN_PATH) + " " + args); }

}  // namespace qdq::testing
