#include "report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include "report/number_text.h"

namespace qdq {

namespace {

constexpr double kWidth = 640, kHeight = 360;
constexpr double kLeft = 70, kRight = 20, kTop = 36, kBottom = 70;
const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

// Maps data coordinates onto the plot area; y may be logarithmic.
struct Axes {
    double x0, x1, y0, y1;
    bool log_y = false;
    double px(double x) const { return kLeft + (x - x0) / (x1 - x0) * (kWidth - kLeft - kRight); }
    double py(double y) const {
        double t = log_y ? (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0)) : (y - y0) / (y1 - y0);
        return kHeight - kBottom - t * (kHeight - kTop - kBottom);
    }
};

// About five ticks at 1, 2 or 5 times a power of ten.
std::vector<double> ticks(double lo, double hi) {
    double span = hi - lo;
    if (!(span > 0)) return {lo};
    double step = std::pow(10.0, std::floor(std::log10(span / 5)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (span / (step * m) <= 6) {
            step *= m;
            break;
        }
    std::vector<double> out;
    for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * span; t += step) out.push_back(std::fabs(t) < 1e-12 * span ? 0 : t);
    return out;
}

std::string text(double x, double y, const std::string& s, const char* anchor = "middle", const char* extra = "") {
    return "<text x=\"" + general(x) + "\" y=\"" + general(y) + "\" text-anchor=\"" + anchor + "\" " + extra + ">" +
           escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& colour, const char* extra = "") {
    return "<line x1=\"" + general(x1) + "\" y1=\"" + general(y1) + "\" x2=\"" + general(x2) + "\" y2=\"" + general(y2) +
           "\" stroke=\"" + colour + "\" " + extra + "/>\n";
}

std::string frame(const std::string& title, const std::string& x_label, const std::string& y_label, const Axes& a,
                  bool x_ticks) {
    std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"360\" font-family=\"sans-serif\" "
                    "font-size=\"11\">\n<rect width=\"640\" height=\"360\" fill=\"white\"/>\n";
    s += text(kWidth / 2, 20, title, "middle", "font-size=\"13\"");
    s += line(kLeft, kHeight - kBottom, kWidth - kRight, kHeight - kBottom, "black");
    s += line(kLeft, kTop, kLeft, kHeight - kBottom, "black");
    if (x_ticks)
        for (double t : ticks(a.x0, a.x1)) {
            s += line(a.px(t), kHeight - kBottom, a.px(t), kHeight - kBottom + 4, "black");
            s += text(a.px(t), kHeight - kBottom + 16, general(t));
        }
    if (a.log_y) {
        for (double t = std::pow(10.0, std::ceil(std::log10(a.y0))); t <= a.y1; t *= 10) {
            s += line(kLeft - 4, a.py(t), kLeft, a.py(t), "black");
            s += text(kLeft - 6, a.py(t) + 4, general(t), "end");
        }
    } else {
        for (double t : ticks(a.y0, a.y1)) {
            s += line(kLeft - 4, a.py(t), kLeft, a.py(t), "black");
            s += text(kLeft - 6, a.py(t) + 4, general(t), "end");
        }
    }
    s += text(kWidth / 2, kHeight - 12, x_label);
    s += "<text transform=\"translate(16," + general(kHeight / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape(y_label) + "</text>\n";
    return s;
}

std::string legend(const std::vector<std::string>& names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) {
        double y = kTop + 8 + 14 * (double)i;
        const char* colour = kColours[i % std::size(kColours)];
        s += line(kWidth - kRight - 150, y, kWidth - kRight - 134, y, colour, "stroke-width=\"2\"");
        s += text(kWidth - kRight - 130, y + 4, names[i], "start");
    }
    return s;
}

}  // namespace

std::string svg_histogram(const std::string& title, const std::string& x_label, double bin_width,
                          const std::vector<double>& counts, const std::vector<PlotMarker>& markers) {
    double top = 1;
    for (double c : counts) top = std::max(top, c);
    double x_end = bin_width * (double)counts.size();
    for (const PlotMarker& m : markers) x_end = std::max(x_end, m.x);
    Axes a{0, x_end > 0 ? x_end : 1, 0.5, top * 2, true};
    std::string s = frame(title, x_label, "count", a, true);
    for (size_t i = 0; i < counts.size(); ++i) {
        if (counts[i] <= 0) continue;
        double x = a.px(bin_width * (double)i), w = std::max(a.px(bin_width * (double)(i + 1)) - x, 0.5);
        s += "<rect x=\"" + general(x) + "\" y=\"" + general(a.py(counts[i])) + "\" width=\"" + general(w) +
             "\" height=\"" + general(a.py(a.y0) - a.py(counts[i])) + "\" fill=\"#999999\"/>\n";
    }
    std::vector<std::string> names;
    for (size_t i = 0; i < markers.size(); ++i) {
        const char* colour = kColours[i % std::size(kColours)];
        s += line(a.px(markers[i].x), kTop, a.px(markers[i].x), kHeight - kBottom, colour, "stroke-width=\"1.5\"");
        names.push_back(markers[i].name + " " + general(markers[i].x));
    }
    return s + legend(names) + "</svg>\n";
}

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<PlotSeries>& series) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (const PlotSeries& p : series)
        for (size_t i = 0; i < p.x.size(); ++i) {
            x0 = std::min(x0, p.x[i]), x1 = std::max(x1, p.x[i]);
            y0 = std::min(y0, p.y[i]), y1 = std::max(y1, p.y[i]);
        }
    if (!(x1 > x0)) x0 = (std::isfinite(x0) ? x0 : 0) - 1, x1 = x0 + 2;
    if (!(y1 > y0)) y0 = (std::isfinite(y0) ? y0 : 0) - 1, y1 = y0 + 2;
    double pad = (y1 - y0) * 0.05;
    Axes a{x0, x1, y0 - pad, y1 + pad};
    std::string s = frame(title, x_label, y_label, a, true);
    std::vector<std::string> names;
    for (size_t k = 0; k < series.size(); ++k) {
        std::string points;
        for (size_t i = 0; i < series[k].x.size(); ++i)
            points += general(a.px(series[k].x[i])) + "," + general(a.py(series[k].y[i])) + " ";
        s += "<polyline fill=\"none\" stroke-width=\"1.5\" stroke=\"" + std::string(kColours[k % std::size(kColours)]) +
             "\" points=\"" + points + "\"/>\n";
        names.push_back(series[k].name);
    }
    return s + (series.size() > 1 ? legend(names) : "") + "</svg>\n";
}

std::string svg_bar_chart(const std::string& title, const std::string& y_label, const std::vector<std::string>& labels,
                          const std::vector<double>& values) {
    if (labels.size() != values.size()) throw std::invalid_argument("svg_bar_chart: one value per label");
    double lo = INFINITY, hi = -INFINITY;
    for (double v : values) lo = std::min(lo, v), hi = std::max(hi, v);
    double margin = std::max((hi - lo) * 0.25, std::fabs(hi) * 0.01 + 1e-9);
    Axes a{0, (double)std::max<size_t>(values.size(), 1), lo - margin, hi + margin};
    std::string s = frame(title, "", y_label, a, false);
    for (size_t i = 0; i < values.size(); ++i) {
        double x = a.px((double)i + 0.15), w = a.px((double)i + 0.85) - x;
        s += "<rect x=\"" + general(x) + "\" y=\"" + general(a.py(values[i])) + "\" width=\"" + general(w) +
             "\" height=\"" + general(a.py(a.y0) - a.py(values[i])) + "\" fill=\"" + kColours[0] + "\"/>\n";
        s += text(a.px((double)i + 0.5), a.py(values[i]) - 4, general(values[i]));
        // Slanted: names such as "percentile-99.999" are wider than their bars.
        const double lx = a.px((double)i + 0.6), ly = kHeight - kBottom + 12;
        s += text(lx, ly, labels[i], "end",
                  ("font-size=\"9\" transform=\"rotate(-25 " + general(lx) + " " + general(ly) + ")\"").c_str());
    }
    return s + "</svg>\n";
}

void write_svg(const std::string& path, const std::string& svg) {
    std::ofstream out(path, std::ios::trunc);
    out << svg;
    if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace qdq
