// The human-readable side of `qdqtrain calibrate` (stages/calibrate.h): from what
// calibration.json holds (results/calibration_result.h), calibration_report.md in the output
// directory, with SVG plots under plots/ (the metric by method, and the histogram of each
// activation quantizer with the range each method chose).
#pragma once

#include <optional>
#include <string>

#include "results/calibration_result.h"

namespace qdq {

// The report's sections: the metric by method, each quantizer's range by method with its
// clipping, SQNR and outlier ratio, the outliers and where they sit, the sensitivity sweep.
void write_calibration_report(const std::string& out_dir, const CalibrationResult& calibration);

// An activation's max over its 99.99th percentile, both as the max and percentile-99.99
// calibrators chose them; none when either method did not run (or the percentile is zero).
std::optional<double> outlier_ratio(const QuantizerStats& q);
// The report's "outliers" are activations with at least this ratio: a Gaussian's is about 1.4.
inline constexpr double kOutlierRatio = 5;

// Which tensor a QDQBERT quantizer reads, and whether that is where the outlier literature
// (Bondarenko et al. 2021, "Understanding and Overcoming the Challenges of Efficient
// Transformer Quantization") finds BERT's outliers: the FFN's output and the residual stream,
// summed before each LayerNorm. Quantizers of one tensor get one answer.
struct QuantizerPlace {
    std::string description;
    bool where_outliers_are_reported;
};
QuantizerPlace quantizer_place(const std::string& name);

}  // namespace qdq
