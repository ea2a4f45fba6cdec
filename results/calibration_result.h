// What `qdqtrain calibrate` (stages/calibrate.h) found, as calibration.json holds it: the float
// model's metrics, each method's metrics and checkpoint, what calibrating cost, every quantizer's
// ranges and their clipping and SQNR, and the sensitivity sweep. calibration.json is written and
// read only through calibration_result_to_json / calibration_result_from_json.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qdqbert/qdq_placement.h"
#include "results/result_fields.h"

namespace qdq {

// With a validation split (data.validation_fraction) every model is evaluated twice: `metrics`
// are the test set's (data.eval_files), the ones reported, and `validation` those the best
// method is chosen by. Without one there is only `metrics`, and the choice is made on it.
struct CalibratedMethod {
    std::string name{};        // "max", "percentile-99.99", "mse", ... ("method" in the file)
    Metrics metrics{};         // of the model quantized by its ranges
    // <method>/ranges.h5: the ranges, over the calibration's model.h5 (trainers/checkpoint.h
    // loads both); <method>/model.h5 in runs from before, weights and ranges in one file.
    std::string checkpoint{};
    std::optional<Metrics> validation{};
};

// CPU seconds: the plain forward pass over the calibration batches is the unit of the ratios.
struct CalibrationCost {
    int64_t calibration_examples = 0;
    int64_t batches = 0;
    double plain_pass_seconds = 0;
    double collect_seconds = 0;
    double collect_ratio = 0;               // collect_seconds / plain_pass_seconds
    double ranges_seconds_all_methods = 0;  // reading the ranges of every method run
    double total_ratio = 0;                 // (collect + ranges) / plain_pass_seconds
};

// A weight's per-channel max ranges, exact over the tensor.
struct WeightRangeStats {
    double amax_max = 0, amax_min = 0;  // the largest and smallest channel's range
    double clipped_fraction = 0;
    double sqnr_db = 0;
};

// An activation's calibration histogram of |x|, merged to at most 512 bars.
struct ActivationHistogram {
    double bin_width = 0;
    std::vector<int64_t> counts{};
    double max = 0;  // the exact max seen
};

// The range one method chose for an activation, with its clipping and SQNR on the histogram.
struct MethodRangeStats {
    double amax = 0;
    double clipped_fraction = 0;
    double sqnr_db = 0;
};

struct QuantizerStats {
    std::string name{};
    std::optional<WeightRangeStats> weight{};        // a weight's quantizer ("kind": "weight")
    std::optional<ActivationHistogram> histogram{};  // an activation's, with a histogram calibrator
    // The range each method chose, by method name: activations with a histogram.
    std::map<std::string, MethodRangeStats> methods{};
};

struct SensitivityRow {
    std::string left_in_float{};  // "layer 3", or a quantizer's name
    double value = 0;           // the metric with it in float, the rest quantized
};

struct SensitivitySweep {
    std::string method{};  // the ranges of the rest: the best method's
    double baseline = 0;  // the metric with everything quantized
    std::vector<SensitivityRow> rows{};
    // The float model where the sweep ran, validation's first half; none before the sweep ran
    // there (or without a validation split: the report's FP32 is then the test set's).
    std::optional<double> fp32{};
};

struct CalibrationResult {
    std::string checkpoint{};  // the float weights calibrated
    std::string metric{};      // the metric the best method is chosen by (on validation, if split)
    QuantizationConfig quantization{};
    Metrics fp32{};
    std::optional<Metrics> fp32_validation{};
    std::vector<CalibratedMethod> methods{};
    std::string best{};  // a method's name
    CalibrationCost cost{};
    std::vector<QuantizerStats> quantizers{};
    std::optional<SensitivitySweep> sensitivity{};
};

// The method named `name`, or null.
const CalibratedMethod* find_method(const CalibrationResult& result, const std::string& name);

nlohmann::json calibration_cost_to_json(const CalibrationCost& cost);
nlohmann::json calibration_result_to_json(const CalibrationResult& result);
// `path` is where the result sits in `source` ("" at the root of calibration.json,
// "calibration" inside results.json).
CalibrationResult calibration_result_from_json(const nlohmann::json& j, const std::string& path, const std::string& source);

}  // namespace qdq
