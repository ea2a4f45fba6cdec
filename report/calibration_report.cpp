#include "report/calibration_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "report/number_text.h"
#include "report/svg_plot.h"
#include "report/text_append.h"

namespace qdq {

namespace {

// Fractions (accuracy) read as percentages; others (SQuAD's F1 and EM, already percentages;
// losses) as they are.
std::string metric_text(double v, bool fraction) { return fraction ? fixed(100 * v, 2) : fixed(v, 3); }

std::string file_name(const std::string& quantizer) {
    std::string s = quantizer;
    for (char& c : s)
        if (c == '/' || c == ' ') c = '_';
    return s;
}

// The metric of FP32 and of each method run, as a table and a bar chart.
std::string methods_section(const std::string& out_dir, const CalibrationResult& r, double fp32, bool fraction) {
    const std::string& metric = r.metric;
    std::string md = "## " + metric + " by method\n\n| method | " + metric + " | vs FP32 |\n|---|---:|---:|\n";
    md += "| FP32 | " + metric_text(fp32, fraction) + " | |\n";
    std::vector<std::string> labels = {"fp32"};
    std::vector<double> values = {fraction ? 100 * fp32 : fp32};
    for (const CalibratedMethod& m : r.methods) {
        const double v = m.metrics.value(metric, m.checkpoint);
        md += "| " + m.name + (m.name == r.best ? " (best)" : "") + " | " + metric_text(v, fraction) + " | " +
              (v >= fp32 ? "+" : "") + metric_text(v - fp32, fraction) + " |\n";
        labels.push_back(m.name);
        values.push_back(fraction ? 100 * v : v);
    }
    write_svg(out_dir + "/plots/metric_by_method.svg", svg_bar_chart(metric + " by calibration method", metric, labels, values));
    md += "\n![" + metric + " by method](plots/metric_by_method.svg)\n\n";
    return md;
}

// The range `method` chose for activation `q`; the error names the method the report lacks.
const MethodRangeStats& range_by(const QuantizerStats& q, const std::string& method) {
    auto it = q.methods.find(method);
    if (it == q.methods.end()) throw std::runtime_error(q.name + ": no range for calibration method '" + method + "'");
    return it->second;
}

// Each activation quantizer's range by every method run and its histogram; each weight's.
std::string quantizers_section(const std::string& out_dir, const CalibrationResult& r) {
    const std::string& best = r.best;
    std::string md = "## Quantizers\n\nActivation ranges (amax) by method, and for the best method (" + best +
          ") the fraction of values clipped and the signal-to-quantization-noise ratio, both read "
          "from the calibration histogram. Weights are ranged per channel by max: their SQNR is exact.\n\n";
    // One column per method run, "percentile-99.9" shortened to "p99.9".
    std::vector<std::string> columns;
    md += "| quantizer |";
    for (const CalibratedMethod& m : r.methods) {
        columns.push_back(m.name);
        const std::string& c = columns.back();
        const bool percentile = c.starts_with("percentile-");  // shown as p99.9
        append(md, {percentile ? " p" : " ", std::string_view(c).substr(percentile ? 11 : 0), " |"});
    }
    md += " clipped | SQNR dB | max ÷ p99.99 |\n|---|";
    for (size_t i = 0; i < columns.size() + 3; ++i) md += "---:|";
    md += "\n";
    for (const QuantizerStats& q : r.quantizers) {
        if (q.weight) {
            append(md, {"| `", q.name, "` | ", general(q.weight->amax_max), " (max row) |"});
            for (size_t i = 1; i < columns.size(); ++i) md += " |";
            append(md, {" ", general(q.weight->clipped_fraction), " | ", fixed(q.weight->sqnr_db, 1), " | |\n"});
            continue;
        }
        if (q.methods.empty()) continue;
        append(md, {"| `", q.name, "` |"});
        for (const std::string& c : columns) append(md, {" ", general(range_by(q, c).amax), " |"});
        const MethodRangeStats& b = range_by(q, best);
        const std::optional<double> ratio = outlier_ratio(q);
        append(md, {" ", general(b.clipped_fraction), " | ", fixed(b.sqnr_db, 1), " | ", ratio ? fixed(*ratio, 1) : "", " |\n"});

        if (!q.histogram) throw std::runtime_error(q.name + ": ranges by method without a histogram");
        std::vector<double> counts(q.histogram->counts.begin(), q.histogram->counts.end());
        std::vector<PlotMarker> markers;
        for (const std::string& c : columns) markers.push_back({c, range_by(q, c).amax});
        write_svg(out_dir + "/plots/" + file_name(q.name) + ".svg",
                  svg_histogram(q.name, "|x|", q.histogram->bin_width, counts, markers));
    }
    return md;
}

// The activations whose max stands far beyond their 99.99th percentile, and where they sit.
std::string outliers_section(const CalibrationResult& r) {
    std::vector<std::pair<double, const QuantizerStats*>> found;
    int measured = 0;
    for (const QuantizerStats& q : r.quantizers)
        if (const std::optional<double> ratio = outlier_ratio(q)) {
            ++measured;
            if (*ratio >= kOutlierRatio) found.push_back({*ratio, &q});
        }
    if (measured == 0) return "";
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string md = "\n## Outliers\n\nActivations whose max is at least " + fixed(kOutlierRatio, 0) +
                     " times their 99.99th percentile (the percentile-99.99 calibrator's range): " +
                     std::to_string(found.size()) + " of " + std::to_string(measured) + ".";
    if (found.empty()) return md + "\n";
    int literature = 0;
    std::string rows = "\n| quantizer | max ÷ p99.99 | where |\n|---|---:|---|\n";
    for (const auto& [ratio, q] : found) {
        const QuantizerPlace place = quantizer_place(q->name);
        literature += place.where_outliers_are_reported;
        rows += "| `" + q->name + "` | " + fixed(ratio, 1) + " | " + place.description + " |\n";
    }
    return md + " " + std::to_string(literature) + " of them sit where the literature puts BERT's outliers: the FFN's output "
                "and the residual stream summed before LayerNorm (Bondarenko et al. 2021).\n" + rows;
}

// The metric with each part left in float, largest gain first.
std::string sensitivity_section(const CalibrationResult& r, const SensitivitySweep& s, double fp32, bool fraction) {
    const std::string& metric = r.metric;
    const double base = s.baseline;
    const std::string where = s.fp32 ? " on validation's first half" : "";
    std::string md = "\n## Sensitivity\n\n" + metric + where + " with one part left in float, the rest quantized by " +
          s.method + " (all quantized: " + metric_text(base, fraction) + "; FP32: " +
          metric_text(s.fp32.value_or(fp32), fraction) + "). The largest gains mark the quantizers that cost the most.\n\n";
    std::vector<SensitivityRow> rows = s.rows;
    std::stable_sort(rows.begin(), rows.end(), [](const SensitivityRow& a, const SensitivityRow& b) { return a.value > b.value; });
    md += "| left in float | " + metric + " | gain |\n|---|---:|---:|\n";
    for (const SensitivityRow& row : rows)
        md += "| " + row.left_in_float + " | " + metric_text(row.value, fraction) + " | " + (row.value >= base ? "+" : "") +
              metric_text(row.value - base, fraction) + " |\n";
    return md;
}

}  // namespace

std::optional<double> outlier_ratio(const QuantizerStats& q) {
    const auto max = q.methods.find("max"), p = q.methods.find("percentile-99.99");
    if (max == q.methods.end() || p == q.methods.end() || !(p->second.amax > 0)) return std::nullopt;
    return max->second.amax / p->second.amax;
}

QuantizerPlace quantizer_place(const std::string& name) {
    auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    // Several quantizers read one tensor: the residual stream, a LayerNorm's output, feeds Q, K
    // and V and the attention's residual add, or the FFN and its residual add. They are placed
    // by that tensor, so they agree.
    if (has(".attention.self.matmul_")) return {"attention: the operands of Q·Kᵀ and probabilities·V", false};
    if (has(".attention.self."))
        return {"residual stream (the previous LayerNorm's output), entering attention as Q, K and V", true};
    if (has(".attention.output.add_residual_input"))
        return {"residual stream (the previous LayerNorm's output), in the sum before the attention's LayerNorm", true};
    if (has(".attention.output.add_local_input")) return {"attention output, in the sum before its LayerNorm", false};
    if (has(".attention.output.dense.")) return {"attention context (input of its output projection)", false};
    if (has(".intermediate.dense."))
        return {"residual stream (the attention's LayerNorm output), entering the FFN", true};
    if (has(".output.add_residual_input"))
        return {"residual stream (the attention's LayerNorm output), in the sum before the FFN's LayerNorm", true};
    if (has(".output.add_local_input")) return {"FFN output, in the sum before the FFN's LayerNorm", true};
    if (has(".output.dense.")) return {"FFN intermediate, after GELU", false};
    return {"elsewhere", false};
}

void write_calibration_report(const std::string& out_dir, const CalibrationResult& r) {
    const double fp32 = r.fp32.value(r.metric, r.checkpoint);
    const bool fraction = metric_scale(r.fp32.task, r.metric) == MetricScale::fraction;
    std::string md = "# Post-training calibration\n\nFloat weights: `" + r.checkpoint + "`. ";
    const CalibrationCost& cost = r.cost;
    md += "Calibrated on " + std::to_string(cost.calibration_examples) + " training examples in " +
          std::to_string(cost.batches) + " batches: collecting took " + fixed(cost.collect_seconds, 2) + " s against " +
          fixed(cost.plain_pass_seconds, 2) + " s for a plain pass over the same batches (" + fixed(cost.collect_ratio, 2) +
          "x); reading the ranges of " + std::to_string(r.methods.size()) + " method(s) took " +
          fixed(cost.ranges_seconds_all_methods, 2) + " s more (" + fixed(cost.total_ratio, 2) + "x in all).\n\n";

    md += methods_section(out_dir, r, fp32, fraction);
    md += quantizers_section(out_dir, r);
    md += outliers_section(r);
    if (r.sensitivity) md += sensitivity_section(r, *r.sensitivity, fp32, fraction);
    md += "\nHistograms with each method's range: `plots/<quantizer>.svg`.\n";
    std::ofstream out(out_dir + "/calibration_report.md", std::ios::trunc);
    out << md;
    if (!out) throw std::runtime_error(out_dir + "/calibration_report.md: cannot write");
}

}  // namespace qdq
