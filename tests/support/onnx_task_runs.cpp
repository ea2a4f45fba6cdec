#include "tests/support/onnx_task_runs.h"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/rng.h"
#include "autograd/tape.h"
#include "qdqbert/calibration.h"
#include "tests/support/run_qdqtrain.h"
#include "tests/test_onnx_support.h"
#include "trainers/checkpoint.h"

namespace qdq::testing {

nlohmann::json small_bert() {
    return {{"vocab_size", 30522}, {"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4},
            {"intermediate_size", 256}, {"max_position_embeddings", 128}};
}

nlohmann::json training_section(const TempDir& dir, int64_t steps) {
    return {{"output_dir", (dir.path() / "run").string()}, {"seed", 3}, {"per_device_train_batch_size", 16},
            {"per_device_eval_batch_size", 64}, {"max_steps", steps}, {"learning_rate", 3e-3},
            {"weight_decay", 0.01}, {"warmup_ratio", 0.1}, {"logging_steps", steps}, {"eval_steps", steps},
            {"save_steps", steps}};
}

RunFiles imdb_run(const TempDir& dir, int64_t eval_examples) {
    const nlohmann::json raw = {
        {"model", {{"config", small_bert()}}},
        {"data",
         {{"task", "classification"}, {"dataset", "imdb"}, {"train_files", kImdbTrain}, {"eval_files", kImdbTest},
          {"vocab", kVocab}, {"max_seq_length", 64}, {"max_train_examples", 800}, {"max_eval_examples", eval_examples}}},
        {"training", training_section(dir, 100)}};
    return write_run(dir, "fp32.json", raw, (dir.path() / "run" / "model.h5").string());
}

std::string export_run(const TempDir& dir, const RunFiles& run, const std::string& name, const std::string& target) {
    const std::string out = (dir.path() / (name + ".onnx")).string();
    Process p = run_qdqtrain("export " + run.config_path + " --checkpoint " + run.checkpoint + " --out " + out +
                             " --target " + target);
    EXPECT_EQ(p.status, 0) << p.output;
    EXPECT_EQ(python_onnx_check(out), "") << out;
    return out;
}

std::unique_ptr<Task> calibrated_task(const TempDir& dir, const RunFiles& fp32, RunFiles& qdq) {
    nlohmann::json raw = run_config_to_json(fp32.config);
    raw["quantization"] = {{"input", {{"calib_method", "max"}}}, {"calibrator", "max"}};
    qdq = write_run(dir, "qdq.json", raw, (dir.path() / "qdq.h5").string());
    std::unique_ptr<Task> task = make_task(qdq.config, {true, true});
    load_model_weights(task->model(), fp32.checkpoint);
    begin_calibration(task->model());
    {
        task->model().eval();
        NoGradGuard no_grad;
        Rng rng(1);
        const int64_t features = std::min<int64_t>(128, task->train_size());
        for (int64_t start = 0; start < features; start += 32) {
            std::vector<int64_t> batch;
            for (int64_t i = start; i < std::min(start + 32, features); ++i) batch.push_back(i);
            task->train_loss(batch, rng);
        }
    }
    load_activation_ranges(task->model(), {AmaxMethod::Max});
    Checkpoint c;
    c.model = task->model().state_dict();
    c.config = qdq.config;
    save_checkpoint(qdq.checkpoint, c);
    return task;
}

}  // namespace qdq::testing
