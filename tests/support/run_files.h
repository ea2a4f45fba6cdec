// A run as the export tests hand it to `qdqtrain`: its config written into a temp folder (and
// loaded back, as the binary will read it) and the checkpoint the run uses.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "trainers/run_config.h"

namespace qdq::testing {

struct RunFiles {
    std::string config_path, checkpoint;
    RunConfig config;
};

inline RunFiles write_run(const TempDir& dir, const std::string& name, const nlohmann::json& raw,
                          const std::string& checkpoint) {
    RunFiles r{dir.write(name, raw.dump(2)), checkpoint, {}};
    r.config = load_run_config(r.config_path);
    return r;
}

}  // namespace qdq::testing
