// QAT variants: more QAT runs in one pipeline (pipeline.qat_variants), each from the same
// calibrated model as the plain QAT run, so that a table compares QAT, QAT with distillation
// and QAT with learned step sizes without training the FP32 model and calibrating once per row.
//
//   "pipeline": {"qat_variants": {
//       "distillation": {"distillation.temperature": 2, "distillation.alpha": 0.5},
//       "lsq": {"quantization.input.learn_step_size": true, "quantization.weight.learn_step_size": true}}}
//
// A variant's name is its stage's folder (qat_<name>) and its row's label (QAT <name>); its keys
// are dotted as --set takes them. The FP32 model and the calibration are shared, so a variant
// sets only what changes QAT from there: training keys (not output_dir; not learning_rate,
// num_train_epochs or max_steps, for which it sets pipeline.qat_learning_rate_ratio and
// pipeline.qat_num_train_epochs; not bf16, one precision per table), distillation keys, and of
// quantization the input and weight descriptors' num_bits, learn_amax and learn_step_size, and
// recalibrate_weights. Each variant's config is the run's own with those keys set in the
// sections they name, read and checked like the file itself when the file is read; a relative
// distillation.teacher is relative to the config file that is run. Variants run in name order
// (JSON objects are kept sorted).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainers/run_config.h"

namespace qdq {

// `section` is pipeline.qat_variants: an object of name -> object of dotted keys.
std::vector<QatVariant> parse_qat_variants(const nlohmann::json& section, const std::string& source);
nlohmann::json qat_variants_to_json(const std::vector<QatVariant>& variants);

// The run config with the variant's keys set (its own qat_variants removed). Errors name the
// config file and the variant.
RunConfig qat_variant_config(const RunConfig& config, const QatVariant& variant);

}  // namespace qdq
