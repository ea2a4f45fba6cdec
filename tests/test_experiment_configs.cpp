// Every config and sweep under experiments/ reads as the commands read them: each run config
// parses with its data files present and its committed starting checkpoint on disk (a pipeline's QAT
// variants included, which parse with it), and each sweep point is a config that parses with
// that point's keys set. A table that takes hours must not fail on a typo after the first one.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sweeps/sweep.h"
#include "tests/support/data.h"
#include "trainers/run_config.h"

using namespace qdq;
namespace fs = std::filesystem;

namespace {

const fs::path kExperiments = fs::path(QDQ_REPO_DIR) / "experiments";

std::vector<std::string> json_files(const fs::path& dir) {
    std::vector<std::string> files;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

// The data files the experiment configs read, so that a checkout without the data skips (or,
// under CI, fails) with the file named rather than with a config error.
void require_experiment_data() {
    for (const char* file : {"imdb/imdb_train.jsonl.gz", "imdb/imdb_test.jsonl.gz", "mnli/dev_matched.tsv.gz",
                             "squad/dev-v1.1.json.gz", "wiki/enwiki_wikiextractor_AA.jsonl.gz"}) {
        qdq::testing::require_data_file(file);
        if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
    }
}

}  // namespace

TEST(ExperimentConfigs, EveryRunConfigParsesAndStartsFromAnExistingModel) {
    require_experiment_data();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::vector<std::string> configs = json_files(kExperiments / "configs");
    ASSERT_GE(configs.size(), 10u);
    for (const std::string& path : configs) {
        try {
            const RunConfig config = load_run_config(path);
            // A committed model must be there; a run's output (runs/...) is made by the command before.
            const bool committed = config.model.init.find("/experiments/") != std::string::npos;
            if (committed) {
                EXPECT_TRUE(fs::exists(config.model.init)) << path << ": " << config.model.init;
            }
        } catch (const std::exception& e) {
            ADD_FAILURE() << e.what();
        }
    }
}

TEST(ExperimentConfigs, EverySweepPointParses) {
    require_experiment_data();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::vector<std::string> sweeps = json_files(kExperiments / "sweeps");
    ASSERT_GE(sweeps.size(), 5u);
    for (const std::string& path : sweeps) {
        try {
            const Sweep sweep = load_sweep(path);
            for (const SweepRun& run : sweep.runs) load_run_config(sweep.config, run.overrides);
        } catch (const std::exception& e) {
            ADD_FAILURE() << e.what();
        }
    }
}
