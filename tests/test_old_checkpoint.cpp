// A checkpoint written by an older qdqtrain still resumes (tests/fixtures/old_checkpoint/
// make_old_checkpoint.sh: built at commit 1cb772c). Its saved config keeps the quantization
// section as the config spelt it and has no bf16, gradient_accumulation_steps or token count;
// today's code must take it for the same run and, from its step 4, reach the weights the old
// binary reached by running all 12 steps without stopping. And a whole checkpoint of the old
// binary, as its calibrations wrote <method>/model.h5 (weights and ranges, with no "weights"
// naming another file), still loads as the whole model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/hdf5_weights.h"
#include "tests/support/temp_dir.h"
#include "trainers/checkpoint.h"
#include "trainers/run_config.h"
#include "trainers/task.h"
#include "trainers/trainer.h"

namespace qdq {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

const std::string kFixture = std::string(QDQ_FIXTURE_DIR) + "/old_checkpoint";

TEST(OldCheckpoint, ResumesToTheWeightsTheOldBinaryReached) {
    TempDir dir;
    const fs::path out = dir.path() / "qat";
    fs::create_directories(out);
    fs::copy_file(kFixture + "/checkpoint-4.h5", out / "checkpoint-4.h5");
    Checkpoint old = load_checkpoint(kFixture + "/checkpoint-4.h5");
    ASSERT_EQ(old.state.step, 4);
    EXPECT_EQ(old.state.input_tokens_seen, -1);  // not counted then
    // Keys the run's version did not write read as that version ran: bf16 off, and the
    // quantization section's defaults beside what the config gave.
    EXPECT_FALSE(old.config.training.bf16);
    ASSERT_TRUE(old.config.quantization);
    EXPECT_EQ(quantization_config_to_json(*old.config.quantization),
              quantization_config_to_json(quantization_config_from_json({{"calibration_examples", 16}}, "expected")));

    RunConfig config = load_run_config(kFixture + "/qat.json",
                                       {"data.data_dir=" + kFixture, "training.output_dir=" + out.string()});
    std::unique_ptr<Task> task = make_task(config, {.weights = false});  // the checkpoint's weights and ranges
    TrainOutcome outcome = train(config, *task, {});
    ASSERT_EQ(outcome.status, TrainStatus::finished) << outcome.message;
    EXPECT_EQ(outcome.step, 12);
    // The tokens seen before step 4 were not counted: the run reports no count rather than a wrong one.
    std::ifstream log(out / "metrics.jsonl");
    int records = 0;
    for (std::string line; std::getline(log, line); ++records)
        EXPECT_FALSE(nlohmann::json::parse(line).contains("num_input_tokens_seen")) << line;
    EXPECT_GT(records, 0);

    // The same float operations in the same order: equal on the machine that wrote the fixture;
    // elsewhere OpenBLAS may pick another kernel, whose sums differ in the last bits.
    const NamedTensors reached = task->model().state_dict();
    const Hdf5Weights expected = load_hdf5_weights(kFixture + "/model.h5");
    ASSERT_EQ(reached.size(), expected.tensors.size());
    double worst = 0;
    for (size_t i = 0; i < reached.size(); ++i) {
        ASSERT_EQ(reached[i].name, expected.tensors[i].name);
        ASSERT_EQ(reached[i].tensor.shape(), expected.tensors[i].tensor.shape()) << reached[i].name;
        const float* a = reached[i].tensor.f32();
        const float* b = expected.tensors[i].tensor.f32();
        for (int64_t k = 0; k < reached[i].tensor.numel(); ++k) worst = std::max(worst, (double)std::fabs(a[k] - b[k]));
    }
    EXPECT_LE(worst, 1e-6) << "largest difference from the old binary's weights";
}

TEST(OldCheckpoint, AWholeOneLoadsAsTheWholeModel) {
    const std::string path = kFixture + "/checkpoint-4.h5";
    EXPECT_FALSE(nlohmann::json::parse(load_hdf5_config(path)).contains("weights"));
    EXPECT_EQ(checkpoint_weights_file(path), "");
    RunConfig config = load_run_config(kFixture + "/qat.json", {"data.data_dir=" + kFixture});
    std::unique_ptr<Task> task = make_task(config, {.train = false, .eval = false, .weights = false});
    const nn::LoadReport report = read_model_weights(task->model(), path);
    EXPECT_TRUE(report.missing.empty() && report.unexpected.empty()) << report.summary();
    // Every tensor as the file holds it, read by the HDF5 reader alone.
    NamedTensors expected;
    for (const NamedTensor& t : load_hdf5_weights(path).tensors)
        if (t.name.starts_with("model.")) expected.push_back({t.name.substr(6), t.tensor});
    const NamedTensors state = task->model().state_dict();
    ASSERT_EQ(state.size(), expected.size());
    size_t ranges = 0;
    for (const NamedTensor& t : state) {
        const auto same = std::find_if(expected.begin(), expected.end(), [&](const NamedTensor& e) { return e.name == t.name; });
        ASSERT_NE(same, expected.end()) << t.name;
        ASSERT_EQ(same->tensor.shape(), t.tensor.shape()) << t.name;
        EXPECT_EQ(0, std::memcmp(same->tensor.raw(), t.tensor.raw(), (size_t)t.tensor.numel() * 4)) << t.name;
        ranges += t.name.ends_with("._amax");
    }
    EXPECT_EQ(ranges, 20u);
}

}  // namespace
}  // namespace qdq
