// Plots for run reports, written as standalone SVG so that a Markdown report shows them without
// any plotting package: histograms of calibration statistics, curves of training logs, bars of
// metrics by method. Fixed 640×360 canvas, axes with a few round ticks, a legend.
#pragma once

#include <string>
#include <vector>

namespace qdq {

struct PlotSeries {
    std::string name;
    std::vector<double> x, y;
};

struct PlotMarker {  // a vertical line at x, labelled
    std::string name;
    double x = 0;
};

// Counts of bins of equal width starting at 0, on a logarithmic count axis (activations are
// heavy-tailed: the outliers that set max are a handful of counts beside millions), with markers
// for the ranges chosen.
std::string svg_histogram(const std::string& title, const std::string& x_label, double bin_width,
                          const std::vector<double>& counts, const std::vector<PlotMarker>& markers);

// Lines through each series' points.
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                           const std::vector<PlotSeries>& series);

// One bar per label; the value axis spans [min(values) − margin, max(values) + margin].
std::string svg_bar_chart(const std::string& title, const std::string& y_label, const std::vector<std::string>& labels,
                          const std::vector<double>& values);

// Writes `svg` to `path`; throws naming the file when it cannot.
void write_svg(const std::string& path, const std::string& svg);

}  // namespace qdq
