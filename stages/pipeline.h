// The whole path on one config (`qdqtrain pipeline CONFIG`): fine-tune in FP32, calibrate by
// every method, QAT from the best calibration at a fraction of the FP32 learning rate, export
// the FP32 and the QAT model to ONNX and evaluate both in ONNX Runtime, then tabulate. The
// config is an FP32 run config plus a "quantization" section and an optional "pipeline"
// section (run_config.h). Every stage writes its own folder under training.output_dir and is
// skipped when its result is there, so a rerun after an interruption goes on where it stopped:
//   fp32/        the FP32 run                     qat/    the QAT run
//   qat_<name>/  each pipeline.qat_variants run, from the same calibration as qat/; the INT8
//                export is of the best QAT run on validation
//                (each training stage: config.json, metrics.jsonl, model.h5, eval_results.json,
//                and with a validation split test_results.json; its checkpoints are removed
//                when it finishes unless training.save_total_limit says how many to keep)
//   calibrate/   calibrate's output (stages/calibrate.h): the float model once, each method's
//                ranges beside it; with pipeline.accuracy_budget, budget.json and budget/ranges.h5
//   onnx/        model_fp32.onnx, model_int8.onnx (pipeline.onnx_target) and evaluation.json:
//                both run in ONNX Runtime on the evaluation set (stages/onnx_evaluation.h); and
//                model_int8_every.onnx when the accuracy budget leaves quantizers in float
//   results.json, results.md   one row per stage: the task's metrics (and ONNX latency)
#pragma once

#include <cstddef>
#include <vector>

#include "results/pipeline_results.h"
#include "trainers/run_config.h"

namespace qdq {

struct PipelineOutcome {
    bool finished = false;  // false: a training stage was interrupted (it resumes on a rerun)
    PipelineResults results;  // what results.json holds (up to the interrupted stage)
};

PipelineOutcome run_pipeline(const RunConfig& config);

// The QAT run to deploy (0: the plain one, i: qat_variants[i - 1]): the best by the task's main
// metric (accuracy, or SQuAD's F1) on validation, or on the test set without a validation split,
// among the runs `exportable` marks (the ONNX export can write them); the earlier on a tie. The
// plain run is always a candidate: the pipeline checks its config before it starts.
size_t deployed_qat_run(const PipelineResults& results, const std::vector<bool>& exportable);

// The stage configs run_pipeline derives from `config`: the same run with output_dir
// <output_dir>/<stage>; fp32 without quantization; calibrate from fp32/model.h5; qat from the
// chosen calibration's checkpoint at pipeline.qat_learning_rate_ratio × learning_rate. Only qat
// keeps the distillation section; without a teacher of its own, it learns from fp32/model.h5.
RunConfig fp32_stage_config(const RunConfig& config);
RunConfig calibrate_stage_config(const RunConfig& config);
// A QAT variant's stage (trainers/qat_variant.h) is qat_stage_config of its config, named qat_<variant>.
RunConfig qat_stage_config(const RunConfig& config, const std::string& calibration_checkpoint,
                           const std::string& name = "qat");

}  // namespace qdq
