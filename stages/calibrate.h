// Post-training quantization of a fine-tuned model (`qdqtrain calibrate`): the float model is
// evaluated, the calibration examples run through it once with every activation quantizer
// collecting, and then for quantization.calibrator (or, with all_methods, for each of max,
// percentile 99.9/99.99/99.999, MSE and entropy) the ranges are read, the quantized model
// evaluated and saved. A sensitivity sweep then leaves each layer's (or each) quantizer in float
// under the best method and evaluates again (with a validation split, on its first half: the
// accuracy budget checks on the second).
//
// Written into the output directory:
//   model.h5                 the float weights, once: no method changes them
//   <method>/ranges.h5       the method's quantizer ranges (every quantizer's state), naming
//                            ../model.h5 for the rest (trainers/checkpoint.h): model.init of a
//                            QAT run, or the checkpoint of `qdqtrain eval` / `export` with the
//                            same config, loads both
//   calibration.json         metrics per method, calibration cost, every quantizer's ranges,
//                            clipped fraction and SQNR per method, histograms, sensitivity
//   calibration_report.md    the same for people, with plots/*.svg (report/calibration_report.h)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "qdqbert/calibration.h"
#include "results/calibration_result.h"
#include "trainers/run_config.h"
#include "trainers/task.h"

namespace qdq {

struct CalibrateOptions {
    std::string out_dir{};  // empty: training.output_dir
    Sensitivity sensitivity = Sensitivity::layers;
    // Every method of the PTQ table (the pipeline's choice); else quantization.calibrator at
    // quantization.percentile, as HF's quant_trainer --calibrator and --percentile choose.
    bool all_methods = false;
    // The method whose ranges the sensitivity sweep keeps for the rest; none: the best one.
    std::optional<std::string> sweep_method{};
};

// The methods calibrate runs: the configured one, or the six of the PTQ table.
std::vector<CalibrationMethod> methods_to_calibrate(const QuantizationConfig& config, bool all_methods);

// The task's model scored with every quantizer in float, its modes restored afterwards: the FP32
// model whose weights these are, on the selected evaluation set.
Metrics float_metrics(Task& task, int64_t batch_size);

// `task` was made from `config`: its model holds model.init's float weights and the quantizers
// of the "quantization" section.
// Returns what calibration.json holds.
CalibrationResult calibrate(const RunConfig& config, Task& task, const CalibrateOptions& options);

}  // namespace qdq
