// A tiny sentiment task for trainer and sweep tests: a vocabulary and train/eval TSVs written
// into a temp folder ("good"/"bad" decide the label, filler words are noise), and the run config
// of a one-layer BERT that learns it in a few dozen steps.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"

namespace qdq::testing {

inline void write_task_files(const TempDir& dir) {
    dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ngood\nbad\nthe\nfilm\nwas\nplot\nacting\nquite\n");
    const char* filler[] = {"the film was", "the plot was quite", "acting was", "the acting", "film"};
    for (const char* name : {"train.tsv", "eval.tsv"}) {
        std::string rows = "sentence\tlabel\n";
        const int n = std::string(name) == "train.tsv" ? 64 : 32;
        for (int i = 0; i < n; ++i) {
            const bool positive = (i * 7 + (name[0] == 't')) % 2 == 0;
            rows += std::string(filler[i % 5]) + (positive ? " good" : " bad") + (i % 3 ? " the film" : "") + "\t" +
                    (positive ? "1" : "0") + "\n";
        }
        dir.write(name, rows);
    }
}

inline nlohmann::json tiny_config(const TempDir& dir, const std::string& out) {
    return {{"model",
             {{"config",
               {{"vocab_size", 13}, {"hidden_size", 16}, {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                {"intermediate_size", 32}, {"max_position_embeddings", 32}}}}},
            {"data",
             {{"dataset", "sst2"}, {"data_dir", dir.path().string()}, {"vocab", "vocab.txt"},
              {"train_files", "train.tsv"}, {"eval_files", "eval.tsv"}, {"max_seq_length", 16}}},
            {"training",
             {{"output_dir", (dir.path() / out).string()}, {"seed", 7}, {"per_device_train_batch_size", 8},
              {"per_device_eval_batch_size", 16}, {"max_steps", 12}, {"learning_rate", 1e-2},
              {"weight_decay", 0.01}, {"warmup_steps", 2}, {"logging_steps", 3}, {"eval_steps", 5},
              {"save_steps", 4}}}};
}

// `config` with a quantization section: QDQBERT's quantizers, calibrated on 32 examples.
inline nlohmann::json with_quantization(nlohmann::json config) {
    config["quantization"] = {{"calibration_examples", 32}};
    return config;
}

// The tiny task's run for the kill-and-resume tests: dropout on (its random stream must come
// back from the checkpoint), 300 steps, a checkpoint every 10, logs every 7 and evaluations every
// 50 (so that a log window and an evaluation straddle the kills).
inline nlohmann::json resumable_config(const TempDir& dir, const std::string& out) {
    nlohmann::json raw = tiny_config(dir, out);
    raw["model"]["config"]["hidden_dropout_prob"] = 0.2;
    raw["training"]["max_steps"] = 300;
    raw["training"]["save_steps"] = 10;
    raw["training"]["eval_steps"] = 50;
    raw["training"]["logging_steps"] = 7;
    return raw;
}

}  // namespace qdq::testing
