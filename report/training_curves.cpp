#include "report/training_curves.h"

#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "report/svg_plot.h"

namespace qdq {

namespace {

bool is_plotted_metric(const std::string& key) {
    return key.starts_with("eval_") && !key.ends_with("examples") && key != "eval_windows" &&
           !key.ends_with("perplexity");
}

}  // namespace

void write_training_curves(const std::string& run_dir, const std::string& prefix, bool by_tokens) {
    const std::string path = run_dir + "/metrics.jsonl";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    const char* x_key = by_tokens ? "num_input_tokens_seen" : "step";
    PlotSeries train{"train loss", {}, {}};
    std::map<std::string, PlotSeries> losses, metrics;  // eval_*loss, and the other eval_<name>
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        if (line.empty()) continue;
        nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        if (record.is_discarded() || !record.contains("step"))
            throw std::runtime_error(path + ":" + std::to_string(number) + ": not a metrics record");
        if (!record.contains(x_key)) continue;
        const double x = record[x_key].get<double>();
        if (record.contains("loss")) {
            train.x.push_back(x);
            train.y.push_back(record["loss"].get<double>());
        }
        for (const auto& [key, value] : record.items()) {
            if (!value.is_number() || !is_plotted_metric(key)) continue;
            PlotSeries& s = key.ends_with("loss") ? losses[key] : metrics[key];
            if (s.name.empty()) s.name = key;
            s.x.push_back(x);
            s.y.push_back(value.get<double>());
        }
    }
    const std::string x_label = by_tokens ? "input tokens seen" : "step";
    std::vector<PlotSeries> loss_series = {train};
    for (auto& [name, s] : losses) loss_series.push_back(s);
    write_svg(prefix + "_loss.svg", svg_line_chart(run_dir, x_label, "loss", loss_series));
    if (metrics.empty()) return;
    std::vector<PlotSeries> series;
    for (auto& [name, s] : metrics) series.push_back(s);
    write_svg(prefix + "_eval.svg", svg_line_chart(run_dir, x_label, "metric", series));
}

}  // namespace qdq
