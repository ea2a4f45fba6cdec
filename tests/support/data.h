// Tests that read the shared data dir (data/data_dir.h), which a checkout may not have.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace qdq::testing {

// If data_path(relative) is missing: fails the current test when the environment has CI=true
// (CI must run every test), else skips it with a message naming the file. Call it through
// QDQ_REQUIRE_DATA_FILE, which also leaves the test body.
void require_data_file(const std::string& relative);

}  // namespace qdq::testing

#define QDQ_REQUIRE_DATA_FILE(relative)                                                 \
    do {                                                                                \
        ::qdq::testing::require_data_file(relative);                                    \
        if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return; \
    } while (0)
