// Numbers as the reports print them (results.md, calibration_report.md, sweeps' tables, plots'
// labels), written in one place so that every report spells infinity and NaN alike.
#pragma once

#include <string>

namespace qdq {

// `v` with `digits` decimals; "inf", "-inf" and "nan" for those.
std::string fixed(double v, int digits);
// `v` in four significant digits, as %.4g writes it (plot ticks, clipped fractions).
std::string general(double v);

}  // namespace qdq
