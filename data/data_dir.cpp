#include "data/data_dir.h"

#include <cstdlib>

namespace qdq {

std::string data_dir() {
    const char* from_env = std::getenv("QDQ_DATA_DIR");
    if (from_env && *from_env) return from_env;
    return QDQ_DEFAULT_DATA_DIR;
}

std::string data_path(const std::string& relative) { return data_dir() + "/" + relative; }

}  // namespace qdq
