// The product's tasks on synthetic data, for bench_train: a 30,522-word vocabulary and files
// written into a scratch folder, from which make_task builds the task exactly as a run does.
//   classification: 32 single-sentence examples whose token lengths are 128 - 16·(i mod 4)
//                   ([CLS] and [SEP] included), labels alternating, as bench_torch.py's batch;
//   mlm:            a corpus that packs into 32 full 128-token sequences.
// Words are "w<id>", one WordPiece token each; ids are drawn from a fixed seed.
#pragma once

#include <memory>
#include <string>

#include "trainers/run_config.h"
#include "trainers/task.h"

namespace qdq::bench {

constexpr int64_t kBatch = 32, kSeq = 128;

struct ModelSize {
    std::string name;  // tiny, mini, base
    int layers, hidden, heads, ffn;
};

// Qat: fake-quantized fine-tuning; QatDistilled: the same learning from a float teacher of the
// same size (distillation section, T = 2, α = 0.5); QatLsq: with learned step sizes on every
// quantizer (learn_step_size).
enum class BenchTask { Classification, Qat, QatDistilled, QatLsq, MaskedLm };

// A scratch folder holding the synthetic files; removed with the object.
// A workload's products: FP32, training.bf16's, or training.tf32's (a GPU's only); the suffix
// of its row's name.
enum class Products { f32, bf16, tf32 };
inline const char* products_suffix(Products p) { return p == Products::bf16 ? "_bf16" : p == Products::tf32 ? "_tf32" : ""; }

class BenchData {
public:
    BenchData();
    ~BenchData();
    BenchData(const BenchData&) = delete;
    BenchData& operator=(const BenchData&) = delete;

    // The run config of `task` on `size`, its products as `products` says. QatDistilled's
    // teacher, a float model of `size` at its random initialisation, is written on first use.
    RunConfig config(BenchTask task, const ModelSize& size, Products products) const;

private:
    std::string dir_;
};

// make_task on the config; for the QAT tasks every quantizer gets a range (weights per channel from the
// weights, activations amax 8) and quantizes, as after calibration.
std::unique_ptr<Task> make_bench_task(const RunConfig& config, BenchTask task);

}  // namespace qdq::bench
