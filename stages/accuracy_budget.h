// The accuracy budget (pipeline.accuracy_budget: points of the task's metric, e.g. 0.5): when
// the chosen calibration loses more than the budget against the float model, quantizers are left
// in float, the most sensitive first by calibrate's sweep (a layer's quantizers, or one
// quantizer, as pipeline.sensitivity chose), until the loss is within the budget, as Intel
// Neural Compressor's accuracy-aware tuning falls back op by op. QAT and the export then leave
// out the same quantizers, so ONNX Runtime and TensorRT run those ops in float.
//
// With a validation split (data.validation_fraction) the sweep ranks on validation's first half
// and the budget is checked on its second, against FP32 measured there: ranking and stopping on
// one set stopped where that set's noise happened to pass, and lost more on test every time.
// Without one, both read the test set. The result's `metrics` are the test set's. A point is a
// percentage point of accuracy, or one of exact match and F1.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/accuracy_budget_result.h"
#include "results/calibration_result.h"
#include "results/result_fields.h"
#include "trainers/run_config.h"

namespace qdq {


// Runs the search on the model calibrated by `method` (the one QAT starts from), whose config is
// `calibrate` (the pipeline's calibrate stage); writes <output_dir>/budget/ranges.h5, over
// the calibration's <output_dir>/model.h5 ("../model.h5", as each method's ranges).
// Needs calibration's sensitivity sweep and a metric that grows as the model improves; errors
// name pipeline.accuracy_budget.
AccuracyBudgetResult fit_accuracy_budget(const RunConfig& calibrate, const CalibrationResult& calibration,
                                         const std::string& method, double budget);

// The search apart from the model: sweep rows go to float, the highest metric with the row in
// float first (ties in sweep order), each after the last, while the loss is over the budget.
// `loss_after_adding(row)` leaves one more row in float and returns the loss with all so far.
struct FloatSetSearch {
    std::vector<std::string> rows{};  // in the order they were added
    double loss = 0;
    bool held = false;
};
FloatSetSearch search_float_set(const std::vector<SensitivityRow>& sweep, double initial_loss, double budget,
                                const std::function<double(const std::string& row)>& loss_after_adding);

// quantization.disable patterns that match exactly these quantizers (full names).
std::vector<std::string> exact_name_patterns(const std::vector<std::string>& names);

}  // namespace qdq
