// The result files committed under experiments/: each reads back and writes the same JSON,
// and none names a folder of the machine it ran on.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "json/json_file.h"
#include "results/calibration_result.h"
#include "results/pipeline_results.h"

using namespace qdq;
namespace fs = std::filesystem;

// The result files of the runs under experiments/results, written by earlier versions: each
// reads back, its metrics to the task the run trained (the files name none: metrics_from_json
// infers it), and writes back the same JSON, the configs aside (their own formats).
TEST(ResultsFile, TheShippedRunsReadBackToTheirTaskAndWriteTheSameJson) {
    const fs::path results = fs::path(QDQ_REPO_DIR) / "experiments" / "results";
    size_t runs = 0, squad = 0, calibrations = 0;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(results)) {
        const std::string path = e.path().string();
        const bool calibration = e.path().filename() == "calibration.json";
        const bool run =
            e.path().filename() == "results.json" && e.path().parent_path().parent_path().filename() == "runs";
        if (!calibration && !run) continue;
        nlohmann::json file = read_json_file(path), again;
        if (calibration) {
            again = calibration_result_to_json(calibration_result_from_json(file, "", path));
            ++calibrations;
        } else {
            const PipelineResults read = pipeline_results_from_json(file, path);
            EXPECT_EQ(read.fp32.task, read.config.data.task) << path;
            EXPECT_EQ(read.qat.task, read.config.data.task) << path;
            squad += read.config.data.task == TaskKind::squad;
            again = pipeline_results_to_json(read);
            ++runs;
        }
        for (nlohmann::json* j : {&file, &again}) {
            j->erase("config");
            j->erase("quantization");
            if (j->contains("calibration")) (*j)["calibration"].erase("quantization");
        }
        EXPECT_EQ(again.dump(), file.dump()) << path;
    }
    EXPECT_GE(runs, 20u);
    EXPECT_GE(squad, 3u);
    EXPECT_GE(calibrations, 1u);
}

namespace {

// The dotted keys of every string in `json` that is an absolute path.
void absolute_paths(const nlohmann::json& json, const std::string& key, std::vector<std::string>& found) {
    if (json.is_string() && fs::path(json.get<std::string>()).is_absolute()) found.push_back(key);
    if (json.is_object())
        for (const auto& [k, v] : json.items()) absolute_paths(v, key.empty() ? k : key + "." + k, found);
    if (json.is_array())
        for (size_t i = 0; i < json.size(); ++i) absolute_paths(json[i], key + "[" + std::to_string(i) + "]", found);
}

}  // namespace

// A run resolves its config's paths against the machine's folders; the committed records name
// them relative to the repository root (scripts/trim_results.py), so that none names a folder
// of the machine it ran on.
TEST(ResultsFile, TheShippedResultFilesNameNoAbsolutePath) {
    size_t files = 0;
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(fs::path(QDQ_REPO_DIR) / "experiments")) {
        if (e.path().extension() != ".json") continue;
        std::vector<std::string> found;
        absolute_paths(read_json_file(e.path().string()), "", found);
        EXPECT_TRUE(found.empty()) << e.path().string() << ": '" << found.front() << "' and "
                                   << found.size() - 1 << " more";
        ++files;
    }
    EXPECT_GE(files, 40u);
}
