// A run killed with SIGKILL (the qdqtrain binary, twice) and resumed each time ends bit-identical
// to a run never killed: weights, optimizer state and log. In FP32 and with bf16 products, with
// gradient accumulation, with distillation (the teacher reloaded at each start), and in QAT with
// learned step sizes (LSQ), whose ranges are parameters with AdamW moments of their own.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/hdf5_weights.h"
#include "tests/support/metrics_records.h"
#include "tests/support/run_qdqtrain.h"
#include "tests/support/same_weights.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"

extern char** environ;

using namespace qdq;
using namespace qdq::testing;
namespace fs = std::filesystem;

namespace {

void spawn_and_kill_at_checkpoint(const std::string& config, const fs::path& run, int64_t kill_after) {
    pid_t pid;
    const std::string binary = QDQTRAIN_PATH;
    std::vector<std::string> args = {binary, "train", config};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&pid, binary.c_str(), nullptr, nullptr, argv.data(), environ), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!fs::exists(run / checkpoint_name(kill_after)) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed";
}

// SIGKILL at two moments of one run, each followed by a resume: the end equals a run never
// killed. `configure` changes the tiny task's config (it may train what the run needs first);
// `check_model`, if given, looks at the final model.
void expect_killed_run_resumes_bit_identical(const std::function<void(const TempDir&, nlohmann::json&)>& configure,
                                             const std::function<void(const fs::path&)>& check_model = {}) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = resumable_config(dir, "straight");
    configure(dir, raw);
    Process straight = run_qdqtrain("train " + dir.write("straight.json", raw.dump(2)));
    ASSERT_EQ(straight.status, 0) << straight.output;

    raw["training"]["output_dir"] = (dir.path() / "killed").string();
    const std::string config = dir.write("killed.json", raw.dump(2));
    const fs::path run = dir.path() / "killed";
    for (int64_t kill_after : {30, 150}) spawn_and_kill_at_checkpoint(config, run, kill_after);
    Process resumed = run_qdqtrain("train " + config);
    ASSERT_EQ(resumed.status, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resuming"), std::string::npos);
    expect_same_weights(dir.path() / "straight" / "model.h5", run / "model.h5");
    EXPECT_EQ(metrics_records(dir.path() / "straight"), metrics_records(run));
    if (check_model) check_model(run / "model.h5");
}

}  // namespace

TEST(Trainer, KilledRunResumesBitIdentical) {
    expect_killed_run_resumes_bit_identical([](const TempDir&, nlohmann::json&) {});
}

TEST(Trainer, KilledBf16RunResumesBitIdentical) {
    expect_killed_run_resumes_bit_identical([](const TempDir&, nlohmann::json& raw) { raw["training"]["bf16"] = true; });
}

// From a teacher trained first (trainers/distillation.h), which each start reloads.
TEST(Trainer, KilledDistilledRunResumesBitIdentical) {
    expect_killed_run_resumes_bit_identical([](const TempDir& dir, nlohmann::json& raw) {
        Process teacher = run_qdqtrain("train " + dir.write("teacher.json", tiny_config(dir, "teacher").dump(2)));
        ASSERT_EQ(teacher.status, 0) << teacher.output;
        raw["distillation"] = {{"teacher", (dir.path() / "teacher" / "model.h5").string()}, {"temperature", 2.0}, {"alpha", 0.5}};
    });
}

// Three micro-batches a step, eight batches an epoch: steps straddle epochs, and a kill lands
// between a step's micro-batches as often as not.
TEST(Trainer, KilledRunWithGradientAccumulationResumesBitIdentical) {
    expect_killed_run_resumes_bit_identical(
        [](const TempDir&, nlohmann::json& raw) { raw["training"]["gradient_accumulation_steps"] = 3; });
}

// The descriptors' fixed amax start the ranges (no calibration needed); every range moves.
TEST(Trainer, KilledLsqQatResumesBitIdenticalAndItsRangesMove) {
    expect_killed_run_resumes_bit_identical(
        [](const TempDir&, nlohmann::json& raw) {
            raw["quantization"] = {{"input", {{"calib_method", "max"}, {"amax", 4.0}, {"learn_step_size", true}}},
                                   {"weight", {{"axis", 0}, {"amax", 0.5}, {"learn_step_size", true}}},
                                   {"calibrator", "max"}};
        },
        [](const fs::path& model) {
            int ranges = 0;
            for (const NamedTensor& t : load_hdf5_weights(model.string()).tensors) {
                if (!t.name.ends_with("_amax")) continue;
                ++ranges;
                const float start = t.name.find("_weight_quantizer") != std::string::npos ? 0.5f : 4.0f;
                for (float a : t.tensor.to_vector()) EXPECT_NE(a, start) << t.name;
            }
            EXPECT_EQ(ranges, 20);
        });
}
