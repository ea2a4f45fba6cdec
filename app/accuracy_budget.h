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

#include "app/calibration_result.h"
#include "app/result_fields.h"
#include "trainers/run_config.h"

namespace qdq {

struct AccuracyBudgetResult {
    double budget = 0;
    std::string method{};                         // the calibration whose ranges the rest keep
    double loss = 0;                              // points below FP32 where it was checked
    bool held = false;                            // false: every sweep row in float was not enough
    std::vector<std::string> left_in_float{};     // sweep rows, in the order they were added
    std::vector<std::string> float_quantizers{};  // those rows' quantizers, by full name
    Metrics metrics{};                            // test set, the float set left out
    std::optional<Metrics> validation{};          // where the loss was checked: validation's second half
    std::optional<Metrics> validation_fp32{};     // the float model there
    std::string checkpoint{};  // budget/ranges.h5: the ranges of the quantizers that stay
};

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

// Whether QAT and the export take the budget's float set: not when it holds every quantizer of
// the calibration. That set is the FP32 model, no INT8 model at all; QAT, the remedy for PTQ's
// loss, then starts from the fully quantized PTQ model instead.
bool qat_takes_float_set(const AccuracyBudgetResult& budget, const CalibrationResult& calibration);

// quantization.disable patterns that match exactly these quantizers (full names).
std::vector<std::string> exact_name_patterns(const std::vector<std::string>& names);

nlohmann::json accuracy_budget_to_json(const AccuracyBudgetResult& result);
AccuracyBudgetResult accuracy_budget_from_json(const nlohmann::json& j, const std::string& path,
                                               const std::string& source);

}  // namespace qdq
