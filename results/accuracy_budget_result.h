// What fitting the accuracy budget found (stages/accuracy_budget.h), as results.json keeps it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/calibration_result.h"
#include "results/result_fields.h"

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

// Whether QAT and the export take the budget's float set: not when it holds every quantizer of
// the calibration. That set is the FP32 model, no INT8 model at all; QAT, the remedy for PTQ's
// loss, then starts from the fully quantized PTQ model instead.
bool qat_takes_float_set(const AccuracyBudgetResult& budget, const CalibrationResult& calibration);

nlohmann::json accuracy_budget_to_json(const AccuracyBudgetResult& result);
AccuracyBudgetResult accuracy_budget_from_json(const nlohmann::json& j, const std::string& path,
                                               const std::string& source);

}  // namespace qdq
