#include "app/pipeline_report.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/svg_plot.h"
#include "app/training_curves.h"
#include "json/json_file.h"

namespace qdq {

namespace fs = std::filesystem;

std::string fixed(double v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

std::vector<std::string> shown_metrics(const nlohmann::json& fp32) {
    if (fp32.contains("f1")) return {"exact_match", "f1"};
    return {"accuracy"};
}

double percent(const nlohmann::json& metrics, const std::string& name) {
    double v = metrics.at(name).get<double>();
    return name == "accuracy" ? 100 * v : v;
}

nlohmann::json pipeline_rows(const nlohmann::json& r) {
    nlohmann::json rows = nlohmann::json::array();
    rows.push_back({{"model", "FP32"}, {"metrics", r["fp32"]}});
    for (const auto& m : r["calibration"]["methods"])
        rows.push_back({{"model", "PTQ " + m["method"].get<std::string>()}, {"metrics", m["metrics"]}});
    rows.push_back({{"model", "QAT (from " + r["qat_from"].get<std::string>() + ")"}, {"metrics", r["qat"]}});
    if (r.contains("onnx"))
        for (const auto& o : r["onnx"]) rows.push_back(o);
    return rows;
}

void write_pipeline_report(const RunConfig& config, const nlohmann::json& results) {
    const std::string dir = config.training.output_dir;
    fs::create_directories(dir + "/plots");
    write_json_file(dir + "/results.json", results);
    const std::vector<std::string> metrics = shown_metrics(results["fp32"]);
    const nlohmann::json rows = pipeline_rows(results);

    std::string md = "# " + config.source + "\n\n| model |";
    std::string rule = "|---|";
    for (const std::string& m : metrics) md += " " + m + " (%) | vs FP32 |", rule += "---:|---:|";
    md += " ONNX Runtime latency, batch 1 (ms) | batched (ms/example) |\n" + rule + "---:|---:|\n";
    std::vector<std::string> labels;
    std::vector<double> values;
    for (const auto& row : rows) {
        md += "| " + row["model"].get<std::string>() + " |";
        for (const std::string& m : metrics) {
            const double v = percent(row["metrics"], m), base = percent(results["fp32"], m);
            md += " " + fixed(v, 2) + " | " + (row["model"] == "FP32" ? "" : (v >= base ? "+" : "") + fixed(v - base, 2)) + " |";
        }
        const bool timed = row.contains("latency_ms");
        md += " " + (timed ? fixed(row["latency_ms"].get<double>(), 1) : std::string()) + " | " +
              (timed ? fixed(row["ms_per_example"].get<double>(), 2) : std::string()) + " |\n";
        labels.push_back(row["model"]);
        values.push_back(percent(row["metrics"], metrics.back()));
    }
    const auto& c = results["calibration"]["cost"];
    md += "\nEvaluated on " + std::to_string(results["fp32"].value("eval_examples", (int64_t)0)) +
          " examples" + (results["fp32"].contains("eval_examples") ? "" : " (see eval_results.json)") +
          ". Calibration: " + std::to_string(c["calibration_examples"].get<int64_t>()) +
          " training examples, collecting at " + fixed(c["collect_ratio"].get<double>(), 2) +
          "x the CPU time of a plain pass over them. QAT from the " + results["qat_from"].get<std::string>() +
          " calibration at " + fixed(config.pipeline.qat_learning_rate_ratio, 3) +
          " of the FP32 learning rate. Per-quantizer ranges and sensitivity: calibrate/calibration_report.md.\n"
          "\n![" + metrics.back() + " by stage](plots/metric_by_stage.svg)\n![FP32 training](plots/fp32_loss.svg)\n"
          "![QAT training](plots/qat_loss.svg)\n";
    std::ofstream out(dir + "/results.md", std::ios::trunc);
    out << md;
    if (!out) throw std::runtime_error(dir + "/results.md: cannot write");
    for (const char* stage : {"fp32", "qat"}) write_training_curves(dir + "/" + stage, dir + "/plots/" + stage);
    write_svg(dir + "/plots/metric_by_stage.svg", svg_bar_chart(metrics.back() + " by stage", metrics.back() + " (%)", labels, values));
}

}  // namespace qdq
