// The trained task runs that the ONNX task tests export (tests/test_onnx_tasks.cpp,
// tests/test_onnx_fidelity_report.cpp): a 2-layer, hidden-64 BERT trained briefly from random
// initialisation on the shared data, its `qdqtrain export`, and its max calibration.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/run_files.h"
#include "tests/support/temp_dir.h"
#include "trainers/task.h"

namespace qdq::testing {

inline constexpr const char* kVocab = "vocab/bert-base-uncased-vocab.txt";
inline constexpr const char* kImdbTrain = "imdb/imdb_train.jsonl.gz";
inline constexpr const char* kImdbTest = "imdb/imdb_test.jsonl.gz";
inline constexpr const char* kSquadDev = "squad/dev-v1.1.json.gz";

// The model.config section: 2 layers, hidden 64, 4 heads, intermediate 256, BERT's vocabulary.
nlohmann::json small_bert();

// The training section: seed 3, batch 16, learning rate 3e-3, `steps` steps into DIR/run,
// logging, evaluating and saving once at the end.
nlohmann::json training_section(const TempDir& dir, int64_t steps);

// The IMDB run of the classifier's tests: 800 reviews cut to 64 tokens, 100 steps, and the first
// `eval_examples` test reviews.
RunFiles imdb_run(const TempDir& dir, int64_t eval_examples);

// `qdqtrain export` of a run into DIR/<name>.onnx, checked by python3-onnx.
std::string export_run(const TempDir& dir, const RunFiles& run, const std::string& name, const std::string& target);

// The trained float model's weights max-calibrated on 128 training features (forward in eval
// mode) and saved as the QDQ run's checkpoint. Max: these tests judge the export, not the ranges.
std::unique_ptr<Task> calibrated_task(const TempDir& dir, const RunFiles& fp32, RunFiles& qdq);

}  // namespace qdq::testing
