// The command line: exit codes 0, 1 and 2 with errors that name the key, the file or the
// option; each subcommand's --help; eval and predict agree with what training saved; a config
// fault found after loading exits 2 before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/run_qdqtrain.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"

using qdq::testing::Process;
using qdq::testing::run_qdqtrain;
using qdq::testing::tiny_config;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

TEST(Cli, ExitCodesAndErrorsNameTheKey) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    raw["training"]["lerning_rate"] = 1e-3;
    Process typo = run_qdqtrain("train " + dir.write("typo.json", raw.dump(2)));
    EXPECT_EQ(typo.status, 2);
    EXPECT_NE(typo.output.find("training.lerning_rate"), std::string::npos) << typo.output;

    raw["training"].erase("lerning_rate");
    const std::string good = dir.write("good.json", raw.dump(2));
    Process bad_set = run_qdqtrain("train " + good + " --set training.max_steps=\\\"many\\\"");
    EXPECT_EQ(bad_set.status, 2);
    EXPECT_NE(bad_set.output.find("training.max_steps"), std::string::npos) << bad_set.output;
    EXPECT_EQ(run_qdqtrain("train " + good + " --frobnicate").status, 2);
    EXPECT_EQ(run_qdqtrain("eval " + good).status, 2);  // --checkpoint is required
    // calibrate's --out naming a file is refused before anything is calibrated.
    Process out_file = run_qdqtrain("calibrate " + good + " --out " + good);
    EXPECT_EQ(out_file.status, 2);
    EXPECT_NE(out_file.output.find("--out names a file, not a folder: " + good), std::string::npos) << out_file.output;
    for (const char* command : {"train", "eval", "predict"}) {
        Process help = run_qdqtrain(std::string(command) + " --help");
        EXPECT_EQ(help.status, 0);
        EXPECT_NE(help.output.find(std::string("usage: qdqtrain ") + command), std::string::npos);
    }

    Process trained = run_qdqtrain("train " + good + " --set training.max_steps=30");
    ASSERT_EQ(trained.status, 0) << trained.output;
    const std::string model = (dir.path() / "run" / "model.h5").string();
    Process missing = run_qdqtrain("eval " + good + " --checkpoint " + model + ".missing");
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.output.find("model.h5.missing"), std::string::npos) << missing.output;

    const std::string metrics = (dir.path() / "metrics.json").string();
    ASSERT_EQ(run_qdqtrain("eval " + good + " --checkpoint " + model + " --out " + metrics).status, 0);
    nlohmann::json evaluated, saved;
    std::ifstream(metrics) >> evaluated;
    std::ifstream(dir.path() / "run" / "eval_results.json") >> saved;
    EXPECT_EQ(evaluated, saved);

    Process predicted = run_qdqtrain("predict " + good + " --checkpoint " + model + " --input " +
                                     (dir.path() / "eval.tsv").string());
    ASSERT_EQ(predicted.status, 0) << predicted.output;
    nlohmann::json predictions = nlohmann::json::parse(predicted.output);
    ASSERT_EQ(predictions.size(), 32u);
    int correct = 0;
    std::ifstream eval(dir.path() / "eval.tsv");
    std::string line;
    std::getline(eval, line);
    for (const nlohmann::json& p : predictions) {
        std::getline(eval, line);
        correct += p["label"].get<int>() == line.back() - '0';
        const std::vector<float> probabilities = p["probabilities"];
        EXPECT_NEAR(probabilities[0] + probabilities[1], 1.0, 1e-6);
    }
    EXPECT_NEAR(correct / 32.0, saved["accuracy"].get<double>(), 1e-12);
}

// A setting found unusable after the config loaded (by the model's config, the task or a stage)
// exits 2 like one the loader refuses, naming the key, and before anything is written.
TEST(Cli, ConfigFaultsFoundAfterLoadingExit2) {
    qdq::testing::TempDir dir;
    write_task_files(dir);
    const auto refused = [&](const std::string& command, const nlohmann::json& raw, const std::string& key) {
        const std::string config = dir.write("bad.json", raw.dump(2));
        Process p = run_qdqtrain(command + " " + config);
        EXPECT_EQ(p.status, 2) << command << ": " << p.output;
        EXPECT_NE(p.output.find(key), std::string::npos) << command << ": " << p.output;
        EXPECT_FALSE(fs::exists(dir.path() / "run")) << command;
    };
    nlohmann::json raw = tiny_config(dir, "run");
    raw["data"]["max_seq_length"] = 64;  // the model holds 32 positions
    refused("train", raw, "data.max_seq_length");

    raw = tiny_config(dir, "run");
    raw["distillation"] = {{"alpha", 0.5}};  // a plain run must name its teacher
    refused("train", raw, "distillation.teacher");

    raw = tiny_config(dir, "run");
    refused("calibrate", raw, "\"quantization\"");
    raw["data"]["eval_files"] = nlohmann::json::array();
    refused("pipeline", qdq::testing::with_quantization(raw), "data.eval_files");

    raw = qdq::testing::with_quantization(tiny_config(dir, "run"));
    refused("save-pretrained --checkpoint x.h5 --out " + (dir.path() / "hf").string(), raw, "quantization");
    raw["quantization"]["weight"] = {{"num_bits", 4}};
    refused("export --checkpoint x.h5 --out " + (dir.path() / "m.onnx").string(), raw, "quantization.weight.num_bits");

    // Only the run's step count (here 12) shows that warmup and decay outlast it.
    raw = tiny_config(dir, "run");
    raw["training"]["lr_scheduler_type"] = "warmup_stable_decay";
    raw["training"]["lr_scheduler_kwargs"] = {{"num_decay_steps", 11}};
    refused("train", raw, "training.lr_scheduler_kwargs: schedule: 'warmup_stable_decay' warms up for 2 steps");
}
