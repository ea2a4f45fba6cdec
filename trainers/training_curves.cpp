#include "trainers/training_curves.h"

#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "trainers/svg_plot.h"

namespace qdq {

void write_training_curves(const std::string& run_dir, const std::string& prefix) {
    const std::string path = run_dir + "/metrics.jsonl";
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    PlotSeries train{"train loss", {}, {}}, eval{"eval loss", {}, {}};
    std::map<std::string, PlotSeries> metrics;  // eval_<name> other than the loss
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        if (line.empty()) continue;
        nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
        if (record.is_discarded() || !record.contains("step"))
            throw std::runtime_error(path + ":" + std::to_string(number) + ": not a metrics record");
        const double step = record["step"].get<double>();
        if (record.contains("loss")) {
            train.x.push_back(step);
            train.y.push_back(record["loss"].get<double>());
        }
        for (const auto& [key, value] : record.items()) {
            if (key.rfind("eval_", 0) != 0 || !value.is_number() || key == "eval_examples" || key == "eval_windows") continue;
            PlotSeries& s = key == "eval_loss" ? eval : metrics[key];
            if (s.name.empty()) s.name = key;
            s.x.push_back(step);
            s.y.push_back(value.get<double>());
        }
    }
    std::vector<PlotSeries> losses = {train};
    if (!eval.x.empty()) losses.push_back(eval);
    write_svg(prefix + "_loss.svg", svg_line_chart(run_dir, "step", "loss", losses));
    if (metrics.empty()) return;
    std::vector<PlotSeries> series;
    for (auto& [name, s] : metrics) series.push_back(s);
    write_svg(prefix + "_eval.svg", svg_line_chart(run_dir, "step", "metric", series));
}

}  // namespace qdq
