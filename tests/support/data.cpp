#include "tests/support/data.h"

#include <cstdlib>
#include <filesystem>

#include "data/data_dir.h"

namespace qdq::testing {

void require_data_file(const std::string& relative) {
    const std::string path = data_path(relative);
    if (std::filesystem::is_regular_file(path)) return;
    const char* ci = std::getenv("CI");
    const std::string message = "data file " + path +
                                " is missing (set QDQ_DATA_DIR to the shared data dir; see its PROVENANCE.md)";
    if (ci && std::string(ci) == "true") FAIL() << message << "; CI=true, so this is a failure";
    GTEST_SKIP() << message;
}

}  // namespace qdq::testing
