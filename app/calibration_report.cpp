#include "app/calibration_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "app/svg_plot.h"

namespace qdq {

namespace {

std::string fixed(double v, int digits) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::string general(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

// Metrics in [0, 1] (accuracy) read as percentages; others (F1 and EM are already percentages,
// losses) as they are.
std::string metric_text(double v, bool fraction) { return fraction ? fixed(100 * v, 2) : fixed(v, 3); }

std::string file_name(const std::string& quantizer) {
    std::string s = quantizer;
    for (char& c : s)
        if (c == '/' || c == ' ') c = '_';
    return s;
}

// The metric of FP32 and of each method run, as a table and a bar chart.
std::string methods_section(const std::string& out_dir, const nlohmann::json& r, double fp32, bool fraction) {
    const std::string metric = r["metric"];
    std::string md = "## " + metric + " by method\n\n| method | " + metric + " | vs FP32 |\n|---|---:|---:|\n";
    md += "| FP32 | " + metric_text(fp32, fraction) + " | |\n";
    std::vector<std::string> labels = {"fp32"};
    std::vector<double> values = {fraction ? 100 * fp32 : fp32};
    for (const auto& m : r["methods"]) {
        const double v = m["metrics"][metric].get<double>();
        const std::string name = m["method"];
        md += "| " + name + (name == r["best"] ? " (best)" : "") + " | " + metric_text(v, fraction) + " | " +
              (v >= fp32 ? "+" : "") + metric_text(v - fp32, fraction) + " |\n";
        labels.push_back(name);
        values.push_back(fraction ? 100 * v : v);
    }
    write_svg(out_dir + "/plots/metric_by_method.svg", svg_bar_chart(metric + " by calibration method", metric, labels, values));
    md += "\n![" + metric + " by method](plots/metric_by_method.svg)\n\n";
    return md;
}

// Each activation quantizer's range by every method run and its histogram; each weight's.
std::string quantizers_section(const std::string& out_dir, const nlohmann::json& r) {
    const std::string best = r["best"];
    std::string md = "## Quantizers\n\nActivation ranges (amax) by method, and for the best method (" + best +
          ") the fraction of values clipped and the signal-to-quantization-noise ratio, both read "
          "from the calibration histogram. Weights are ranged per channel by max: their SQNR is exact.\n\n";
    // One column per method run, "percentile-99.9" shortened to "p99.9".
    std::vector<std::string> columns;
    md += "| quantizer |";
    for (const auto& m : r["methods"]) {
        columns.push_back(m["method"]);
        const std::string& c = columns.back();
        md += " " + (c.starts_with("percentile-") ? "p" + c.substr(11) : c) + " |";
    }
    md += " clipped | SQNR dB |\n|---|";
    for (size_t i = 0; i < columns.size() + 2; ++i) md += "---:|";
    md += "\n";
    for (const auto& q : r["quantizers"]) {
        const std::string name = q["name"];
        if (q["kind"] == "weight") {
            md += "| `" + name + "` | " + general(q["amax_max"]) + " (max row) |";
            for (size_t i = 1; i < columns.size(); ++i) md += " |";
            md += " " + general(q["clipped_fraction"]) + " | " + fixed(q["sqnr_db"], 1) + " |\n";
            continue;
        }
        if (!q.contains("methods")) continue;
        md += "| `" + name + "` |";
        for (const std::string& c : columns) md += " " + general(q["methods"][c]["amax"]) + " |";
        const nlohmann::json& b = q["methods"][best];
        md += " " + general(b["clipped_fraction"]) + " | " + fixed(b["sqnr_db"], 1) + " |\n";

        std::vector<double> counts;
        for (int64_t c : q["histogram"]["counts"]) counts.push_back((double)c);
        std::vector<PlotMarker> markers;
        for (const std::string& c : columns) markers.push_back({c, q["methods"][c]["amax"].get<double>()});
        write_svg(out_dir + "/plots/" + file_name(name) + ".svg",
                  svg_histogram(name, "|x|", q["histogram"]["bin_width"].get<double>(), counts, markers));
    }
    return md;
}

// The metric with each part left in float, largest gain first.
std::string sensitivity_section(const nlohmann::json& r, double fp32, bool fraction) {
    const std::string metric = r["metric"];
    const nlohmann::json& s = r["sensitivity"];
    const double base = s["baseline"].get<double>();
    std::string md = "\n## Sensitivity\n\n" + metric + " with one part left in float, the rest quantized by " +
          s["method"].get<std::string>() + " (all quantized: " + metric_text(base, fraction) + "; FP32: " +
          metric_text(fp32, fraction) + "). The largest gains mark the quantizers that cost the most.\n\n";
    std::vector<nlohmann::json> rows(s["rows"].begin(), s["rows"].end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](const nlohmann::json& a, const nlohmann::json& b) { return a["value"].get<double>() > b["value"].get<double>(); });
    md += "| left in float | " + metric + " | gain |\n|---|---:|---:|\n";
    for (const auto& row : rows) {
        const double v = row["value"].get<double>();
        md += "| " + row["left_in_float"].get<std::string>() + " | " + metric_text(v, fraction) + " | " +
              (v >= base ? "+" : "") + metric_text(v - base, fraction) + " |\n";
    }
    return md;
}

}  // namespace

void write_calibration_report(const std::string& out_dir, const nlohmann::json& r) {
    const std::string metric = r["metric"];
    const double fp32 = r["fp32"][metric].get<double>();
    const bool fraction = metric == "accuracy";
    std::string md = "# Post-training calibration\n\nFloat weights: `" + r["checkpoint"].get<std::string>() + "`. ";
    const nlohmann::json& cost = r["cost"];
    md += "Calibrated on " + std::to_string(cost["calibration_examples"].get<int64_t>()) + " training examples in " +
          std::to_string(cost["batches"].get<int64_t>()) + " batches: collecting took " +
          fixed(cost["collect_seconds"], 2) + " s against " + fixed(cost["plain_pass_seconds"], 2) +
          " s for a plain pass over the same batches (" + fixed(cost["collect_ratio"], 2) +
          "x); reading the ranges of " + std::to_string(r["methods"].size()) + " method(s) took " +
          fixed(cost["ranges_seconds_all_methods"], 2) +
          " s more (" + fixed(cost["total_ratio"], 2) + "x in all).\n\n";

    md += methods_section(out_dir, r, fp32, fraction);
    md += quantizers_section(out_dir, r);
    if (r.contains("sensitivity")) md += sensitivity_section(r, fp32, fraction);
    md += "\nHistograms with each method's range: `plots/<quantizer>.svg`.\n";
    std::ofstream out(out_dir + "/calibration_report.md", std::ios::trunc);
    out << md;
    if (!out) throw std::runtime_error(out_dir + "/calibration_report.md: cannot write");
}

}  // namespace qdq
