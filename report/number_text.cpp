#include "report/number_text.h"

#include <cmath>
#include <cstdio>

namespace qdq {

namespace {

// printf writes NaN as "nan" or "-nan" by its sign bit, which carries no meaning here.
const char* non_finite(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return nullptr;
}

}  // namespace

std::string fixed(double v, int digits) {
    if (const char* text = non_finite(v)) return text;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string general(double v) {
    if (const char* text = non_finite(v)) return text;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

}  // namespace qdq
