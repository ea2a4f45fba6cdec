// The human-readable side of `qdqtrain calibrate` (app/calibrate.h): from what
// calibration.json holds (app/calibration_result.h), calibration_report.md in the output
// directory, with SVG plots under plots/ (the metric by method, and the histogram of each
// activation quantizer with the range each method chose).
#pragma once

#include <string>

#include "app/calibration_result.h"

namespace qdq {

void write_calibration_report(const std::string& out_dir, const CalibrationResult& calibration);

}  // namespace qdq
