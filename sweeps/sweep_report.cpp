#include "sweeps/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "json/json_fields.h"
#include "json/json_file.h"
#include "report/calibration_report.h"
#include "report/number_text.h"
#include "report/pipeline_report.h"
#include "report/pipeline_rows.h"
#include "report/svg_plot.h"
#include "report/text_append.h"
#include "report/training_curves.h"
#include "results/pipeline_results.h"
#include "trainers/run_config.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

// A table cell: a float to 4 decimals, a string without its JSON quotes.
std::string format_cell(const nlohmann::json& value) {
    if (value.is_number_float()) return fixed(value.get<double>(), 4);
    return value.is_string() ? value.get<std::string>() : value.dump();
}

// "mean ± sample standard deviation", or the value alone for one run.
std::string mean_std(const std::vector<double>& xs, int digits, bool sign = false) {
    if (xs.empty()) return "";
    double mean = 0;
    for (double x : xs) mean += x / (double)xs.size();
    std::string out;
    append(out, {sign && mean >= 0 ? "+" : "", fixed(mean, digits)});
    if (xs.size() < 2) return out;
    double ss = 0;
    for (double x : xs) ss += (x - mean) * (x - mean);
    return out + " ± " + fixed(std::sqrt(ss / (double)(xs.size() - 1)), digits);
}

double mean(const std::vector<double>& xs) {
    double m = 0;
    for (double x : xs) m += x / (double)xs.size();
    return m;
}

// One row of the stage table, gathered over the runs of a group.
struct StageRow {
    std::string model;
    std::vector<std::string> from;                   // each run's row's PipelineRow::from
    std::vector<std::vector<double>> value, change;  // per shown metric: each run's %, and − FP32
    std::vector<double> latency_ms, ms_per_example;
};

// The runs whose swept values other than training.seed are equal, in sweep order.
std::vector<std::pair<nlohmann::json, std::vector<const SweepRun*>>> seed_groups(const Sweep& sweep) {
    std::vector<std::pair<nlohmann::json, std::vector<const SweepRun*>>> groups;
    for (const SweepRun& run : sweep.runs) {
        nlohmann::json key = run.values;
        key.erase("training.seed");
        auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
        if (it == groups.end()) groups.push_back({key, {&run}});
        else it->second.push_back(&run);
    }
    return groups;
}

// A list of quantizers with a value each and where each sits, then how many of them sit where
// the literature puts BERT's outliers.
std::string where_they_sit(const std::vector<std::pair<std::string, double>>& shown, const std::string& unit) {
    std::string md;
    int literature = 0;
    for (const auto& [name, value] : shown) {
        const QuantizerPlace place = quantizer_place(name);
        literature += place.where_outliers_are_reported;
        md += "- `" + name + "`, " + fixed(value, 1) + unit + ": " + place.description + "\n";
    }
    return md + "\n" + std::to_string(literature) + " of these " + std::to_string(shown.size()) +
           " sit where the literature puts BERT's outliers (the FFN's output and the residual stream summed before "
           "LayerNorm; Bondarenko et al. 2021).\n\n";
}

// Over the runs of one group: each quantizer's outlier ratio (activations) and its SQNR at the
// range QAT started from; then the activations whose ratio marks outliers, and the activations
// with the lowest SQNR, and where they sit. Both lists: an outlier that fills a few hidden
// dimensions in every token lies below the 99.99th percentile, so only its SQNR shows it.
std::string quantizer_section(const std::vector<PipelineResults>& runs) {
    struct Row {
        std::string name;
        std::vector<double> ratio, sqnr;
    };
    std::vector<Row> rows;
    for (const PipelineResults& r : runs)
        for (const QuantizerStats& q : r.calibration.quantizers) {
            auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& row) { return row.name == q.name; });
            if (it == rows.end()) it = rows.insert(rows.end(), Row{q.name, {}, {}});
            if (q.weight) it->sqnr.push_back(q.weight->sqnr_db);
            if (const std::optional<double> ratio = outlier_ratio(q)) it->ratio.push_back(*ratio);
            if (auto m = q.methods.find(r.qat_from); m != q.methods.end()) it->sqnr.push_back(m->second.sqnr_db);
        }
    if (rows.empty()) return "";
    std::string md = "### Quantizers\n\nEach activation's outlier ratio (its max over its 99.99th percentile) and each "
                     "quantizer's SQNR at the range QAT started from (weights: per channel by max)";
    md += std::string(runs.size() > 1 ? ", mean ± standard deviation over the runs" : "") + ".\n\n";
    md += "| quantizer | max ÷ p99.99 | SQNR dB |\n|---|---:|---:|\n";
    std::vector<const Row*> activations;
    for (const Row& row : rows) {
        md += "| `" + row.name + "` | " + mean_std(row.ratio, 1) + " | " + mean_std(row.sqnr, 1) + " |\n";
        if (!row.ratio.empty()) activations.push_back(&row);
    }
    auto by_ratio = activations, by_sqnr = activations;
    std::stable_sort(by_ratio.begin(), by_ratio.end(),
                     [](const Row* a, const Row* b) { return mean(a->ratio) > mean(b->ratio); });
    const size_t outliers = (size_t)std::count_if(by_ratio.begin(), by_ratio.end(),
                                                  [](const Row* r) { return mean(r->ratio) >= kOutlierRatio; });
    md += "\nOutliers, activations whose ratio is at least " + fixed(kOutlierRatio, 0) + " (a Gaussian's is about 1.4): " +
          std::to_string(outliers) + " of " + std::to_string(by_ratio.size()) + ". ";
    md += outliers ? "Where they sit:\n\n" : "The largest ratios, and where they sit:\n\n";
    std::vector<std::pair<std::string, double>> shown;
    for (size_t i = 0; i < (outliers ? outliers : std::min<size_t>(3, by_ratio.size())); ++i)
        shown.push_back({by_ratio[i]->name, mean(by_ratio[i]->ratio)});
    md += where_they_sit(shown, "");
    std::erase_if(by_sqnr, [](const Row* r) { return r->sqnr.empty(); });
    std::stable_sort(by_sqnr.begin(), by_sqnr.end(),
                     [](const Row* a, const Row* b) { return mean(a->sqnr) < mean(b->sqnr); });
    if (by_sqnr.empty()) return md;
    shown.clear();
    for (size_t i = 0; i < std::min<size_t>(3, by_sqnr.size()); ++i)
        shown.push_back({by_sqnr[i]->name, mean(by_sqnr[i]->sqnr)});
    return md + "The activations with the lowest SQNR at that range, and where they sit:\n\n" +
           where_they_sit(shown, " dB");
}

// How a group's runs ran and were scored (report/pipeline_report.h): one sentence where they
// agree (a grid over training.bf16 puts each precision in its own group), each run's where a
// table was finished by builds that scored differently.
std::string precision_of_runs(const std::vector<PipelineResults>& finished, const std::vector<std::string>& names) {
    std::vector<std::string> sentences;
    for (const PipelineResults& results : finished) sentences.push_back(precision_sentence(results));
    if (std::all_of(sentences.begin(), sentences.end(), [&](const std::string& s) { return s == sentences.front(); }))
        return sentences.front();
    std::string text = "The runs were not all scored alike.";
    for (size_t i = 0; i < sentences.size(); ++i) text += " " + names[i] + ": " + sentences[i];
    return text;
}

// The stage table of one group, with its plots written under plots/ as `name`_*.
std::string stage_table(const Sweep& sweep, const nlohmann::json& key, const std::vector<const SweepRun*>& runs,
                        const std::string& name) {
    std::vector<StageRow> rows;
    std::vector<PipelineResults> finished;
    std::vector<std::string> metrics, done, curves;
    for (const SweepRun* run : runs) {
        const std::string dir = finished_dir(sweep, *run);
        if (dir.empty()) continue;
        const fs::path file = fs::path(dir) / "results.json";
        const PipelineResults& results =
            finished.emplace_back(pipeline_results_from_json(read_json_file(file.string()), file.string()));
        if (metrics.empty()) metrics = shown_metrics(results.fp32.task);
        const std::string run_name = fs::path(run->dir).filename().string();
        done.push_back(run_name + " (seed " + std::to_string(results.config.training.seed) + ")");
        for (const std::string& stage : qat_stage_names(results, {"fp32", "qat"})) {
            const std::string prefix = sweep.results_dir + "/plots/" + run_name + "_" + stage;
            write_training_curves(dir + "/" + stage, prefix);
            curves.push_back("[" + run_name + " " + stage + "](plots/" + run_name + "_" + stage + "_loss.svg)");
        }
        for (const PipelineRow& row : pipeline_rows(results)) {
            const std::string& model = row.model;
            auto it = std::find_if(rows.begin(), rows.end(), [&](const StageRow& r) { return r.model == model; });
            if (it == rows.end()) {
                rows.push_back({model, {}, std::vector<std::vector<double>>(metrics.size()),
                                std::vector<std::vector<double>>(metrics.size()), {}, {}});
                it = rows.end() - 1;
            }
            if (!row.from.empty()) it->from.push_back(row.from);
            for (size_t m = 0; m < metrics.size(); ++m) {
                it->value[m].push_back(row.metrics.percent(metrics[m]));
                it->change[m].push_back(it->value[m].back() - results.fp32.percent(metrics[m]));
            }
            if (row.latency_ms) it->latency_ms.push_back(*row.latency_ms);
            if (row.ms_per_example) it->ms_per_example.push_back(*row.ms_per_example);
        }
    }
    std::string title;
    for (const auto& [k, v] : key.items()) title += (title.empty() ? "" : ", ") + k + " = " + format_cell(v);
    std::string md = "## " + (title.empty() ? std::string("Every run") : title) + "\n\n";
    if (done.empty()) return md + "No run has finished yet.\n\n";
    md += std::to_string(done.size()) + " run" + (done.size() > 1 ? "s, mean ± standard deviation" : "") + ": ";
    for (size_t i = 0; i < done.size(); ++i) md += (i ? ", " : "") + done[i];
    md += ". " + precision_of_runs(finished, done) + "\n\n| model |";
    std::string rule = "|---|";
    for (const std::string& m : metrics) md += " " + m + " (%) | vs FP32 |", rule += "---:|---:|";
    md += " ONNX Runtime latency, batch 1 (ms) | batched (ms/example) |\n" + rule + "---:|---:|\n";
    std::vector<std::string> labels;
    std::vector<double> values;
    for (StageRow& r : rows) {
        std::string model = r.model;
        if (!r.from.empty()) {
            std::sort(r.from.begin(), r.from.end());
            r.from.erase(std::unique(r.from.begin(), r.from.end()), r.from.end());
            model += " (from ";
            for (size_t i = 0; i < r.from.size(); ++i) model += (i ? ", " : "") + r.from[i];
            model += ")";
        }
        append(md, {"| ", model, " |"});
        for (size_t m = 0; m < metrics.size(); ++m)
            append(md, {" ", mean_std(r.value[m], 2), " | ", r.model == "FP32" ? "" : mean_std(r.change[m], 2, true), " |"});
        append(md, {" ", mean_std(r.latency_ms, 1), " | ", mean_std(r.ms_per_example, 2), " |\n"});
        labels.push_back(model);
        values.push_back(mean(r.value.back()));
    }
    const std::string chart = "plots/" + name + "_metric_by_stage.svg";
    write_svg(sweep.results_dir + "/" + chart,
              svg_bar_chart(metrics.back() + " by stage" + (done.size() > 1 ? " (mean over runs)" : ""),
                            metrics.back() + " (%)", labels, values));
    md += "\n![" + metrics.back() + " by stage](" + chart + ")\n\nTraining loss:";
    for (const std::string& c : curves) md += " " + c;
    return md + "\n\n" + quantizer_section(finished);
}

}  // namespace

nlohmann::json sweep_results(const Sweep& sweep) {
    nlohmann::json rows = nlohmann::json::array();
    for (const SweepRun& run : sweep.runs) {
        nlohmann::json row = {{"run", fs::path(run.dir).filename().string()}, {"dir", run.dir}, {"values", run.values}};
        const std::string dir = finished_dir(sweep, run);
        const fs::path results = fs::path(dir) / results_file(sweep);
        if (dir.empty()) row["metrics"] = nullptr;
        else if (sweep.command == "pipeline")
            row["metrics"] =
                pipeline_summary(pipeline_results_from_json(read_json_file(results.string()), results.string()));
        else row["metrics"] = read_json_file(results.string());
        rows.push_back(row);
    }
    auto score = [&](const nlohmann::json& row) -> std::optional<double> {
        if (row["metrics"].is_null() || !row["metrics"].contains(sweep.metric)) return std::nullopt;
        return row["metrics"][sweep.metric].get<double>();
    };
    std::stable_sort(rows.begin(), rows.end(), [&](const nlohmann::json& a, const nlohmann::json& b) {
        auto x = score(a), y = score(b);
        if (!x || !y) return x.has_value() && !y.has_value();
        return sweep.greater_is_better ? *x > *y : *x < *y;
    });
    return rows;
}

std::string sweep_table(const Sweep& sweep, const nlohmann::json& results) {
    std::vector<std::string> keys, metrics;
    for (const nlohmann::json& row : results) {
        for (const auto& [k, v] : row["values"].items())
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
        if (row["metrics"].is_object())
            for (const auto& [k, v] : row["metrics"].items())
                if (std::find(metrics.begin(), metrics.end(), k) == metrics.end()) metrics.push_back(k);
    }
    // The sorting metric first, then the rest in name order.
    std::sort(metrics.begin(), metrics.end(), [&](const std::string& a, const std::string& b) {
        return (a == sweep.metric) != (b == sweep.metric) ? a == sweep.metric : a < b;
    });
    // A metric every run shares (an example count, a stage no swept key reaches) says nothing
    // about the runs: it is named once under the table instead of filling a column.
    std::string shared;
    if (results.size() > 1) {
        std::vector<std::string> varying;
        for (const std::string& m : metrics) {
            bool same = m != sweep.metric;
            for (const nlohmann::json& row : results)
                same = same && row["metrics"].is_object() && row["metrics"].contains(m) &&
                       row["metrics"][m] == results[0]["metrics"][m];
            if (!same) varying.push_back(m);
            else shared += (shared.empty() ? "" : ", ") + m + " " + format_cell(results[0]["metrics"][m]);
        }
        metrics = varying;
    }
    std::string header = "| run |", rule = "|---|";
    for (const std::string& k : keys) header += " " + k + " |", rule += "---|";
    for (const std::string& m : metrics) header += " " + m + " |", rule += "---|";
    std::string table = header + "\n" + rule + "\n";
    for (const nlohmann::json& row : results) {
        std::string line = "| " + row["run"].get<std::string>() + " |";
        for (const std::string& k : keys) append(line, {" ", row["values"].contains(k) ? format_cell(row["values"][k]) : "", " |"});
        for (const std::string& m : metrics) {
            std::string cell = "(no result)";
            if (row["metrics"].is_object()) cell = row["metrics"].contains(m) ? format_cell(row["metrics"][m]) : "";
            line += " " + cell + " |";
        }
        table += line + "\n";
    }
    return shared.empty() ? table : table + "\nThe same in every run: " + shared + ".\n";
}

std::string write_sweep_report(const Sweep& sweep, const nlohmann::json& results) {
    fs::create_directories(sweep.results_dir + "/plots");
    for (const SweepRun& run : sweep.runs) record_run(sweep, run);
    write_json_file(sweep.results_dir + "/results.json", results);
    std::string md = sweep_table(sweep, results);
    if (sweep.command == "pipeline") {
        std::string tables = "# Sweep of " + sweep.config + "\n\n";
        const auto groups = seed_groups(sweep);
        for (size_t g = 0; g < groups.size(); ++g)
            tables += stage_table(sweep, groups[g].first, groups[g].second, "group-" + std::to_string(g));
        md = tables + "## Runs\n\n" + md;
    }
    std::ofstream out(sweep.results_dir + "/results.md", std::ios::trunc);
    out << md;
    if (!out) throw std::runtime_error(sweep.results_dir + "/results.md: cannot write");
    return md;
}

}  // namespace qdq
