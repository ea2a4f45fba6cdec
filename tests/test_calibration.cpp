// Post-training calibration and QAT on a tiny model: the histogram's exact max, range
// statistics against exact and by-hand values, the calibration lifecycle of a model's
// quantizers, `calibrate` writing checkpoints that evaluate to the metrics it reported, and QAT
// starting from them (and refusing to start from float weights).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <tuple>

#include "json/json_file.h"
#include "qdqbert/calibration.h"
#include "qdqbert/qdq_placement.h"
#include "quant/range_stats.h"
#include "report/svg_plot.h"
#include "results/calibration_result.h"
#include "stages/calibrate.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

using namespace qdq;
using qdq::testing::expect_error;
using qdq::testing::TempDir;
using qdq::testing::tiny_config;
using qdq::testing::with_quantization;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

namespace {

Tensor gaussian(int64_t n, float scale, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, scale);
    Tensor t = empty({n});
    for (int64_t i = 0; i < n; ++i) t.f32()[i] = d(gen);
    return t;
}

nlohmann::json quantized_config(const TempDir& dir, const std::string& out) {
    return with_quantization(tiny_config(dir, out));
}

RunConfig parse(const nlohmann::json& raw) { return parse_run_config(raw, "test.json", "."); }

}  // namespace

TEST(HistogramMax, IsTheExactMaxAcrossGrowingBatches) {
    HistogramCalibrator hist;
    MaxCalibrator max;
    // The second batch grows the range; the third stays inside it with a new largest value.
    for (auto [scale, seed] : {std::pair{1.0f, 1u}, {4.0f, 2u}, {3.9f, 3u}}) {
        Tensor x = gaussian(5000, scale, seed);
        collect(hist, x);
        collect(max, x);
    }
    EXPECT_EQ(hist.max, compute_amax(max)[0]);
    TensorQuantizer q(QuantDescriptor{.calib_method = CalibMethod::Histogram});
    q.calibrator = hist;
    q.load_calib_amax({AmaxMethod::Max});
    EXPECT_EQ(q.amax.item(), compute_amax(max)[0]);
    reset(hist);
    EXPECT_EQ(hist.max, 0.0f);
}

TEST(RangeStats, ByHand) {
    // 8 bits, amax 1: scale 127. 0.5 -> 64/127 (63.5 rounds to even), -1 -> -1, 2 clips to 1,
    // 0.26 -> 33/127. Only 2 lies beyond amax (|-1| is on it).
    Tensor x = from_vector({4}, {0.5f, -1.0f, 2.0f, 0.26f});
    RangeStats s = tensor_range_stats(x, full({}, 1.0f), {});
    const double e1 = 64.0 / 127 - 0.5, e4 = 33.0 / 127 - 0.26;
    const double signal = 0.25 + 1 + 4 + 0.26 * 0.26, noise = e1 * e1 + 1 + e4 * e4;
    EXPECT_DOUBLE_EQ(s.clipped_fraction, 0.25);
    EXPECT_NEAR(s.sqnr_db, 10 * std::log10(signal / noise), 1e-5);
    // Per channel: rows of a [2, 2] weight with amax {2, 1}: nothing clipped.
    Tensor w = from_vector({2, 2}, {0.5f, -1.0f, 1.0f, 0.25f});
    EXPECT_DOUBLE_EQ(tensor_range_stats(w, from_vector({2, 1}, {2.0f, 1.0f}), {.axis = 0}).clipped_fraction, 0.0);
    EXPECT_DOUBLE_EQ(tensor_range_stats(w, from_vector({2, 1}, {0.5f, 1.0f}), {.axis = 0}).clipped_fraction, 0.25);
    expect_error([&] { tensor_range_stats(w, from_vector({3, 1}, {2.0f, 1.0f, 1.0f}), {.axis = 0}); },
                 {"one amax per row"});
}

TEST(RangeStats, HistogramAgreesWithExactValues) {
    Tensor x = gaussian(200000, 1.0f, 7);
    HistogramCalibrator hist;
    collect(hist, x);
    for (float amax : {percentile_amax(hist, 99.9), percentile_amax(hist, 99.99), hist.max}) {
        RangeStats approx = histogram_range_stats(hist, amax);
        RangeStats exact = tensor_range_stats(x, full({}, amax), {});
        EXPECT_NEAR(approx.sqnr_db, exact.sqnr_db, 0.3) << "amax " << amax;
        EXPECT_NEAR(approx.clipped_fraction, exact.clipped_fraction, 2e-5) << "amax " << amax;
    }
}

TEST(Calibration, LifecycleOfAModelsQuantizers) {
    TempDir dir;
    write_task_files(dir);
    RunConfig config = parse(quantized_config(dir, "run"));
    std::unique_ptr<Task> task = make_task(config, {true, false});
    nn::Module& model = task->model();
    const auto quantizers = model.named_quantizers();
    ASSERT_EQ(quantizers.size(), 20u);  // one layer: 6 Linears × 2, 4 attention operands, 4 residual addends
    expect_error([&] { check_calibrated(model, "calibrate first"); }, {"_quantizer has no range", "calibrate first"});

    begin_calibration(model);
    for (auto& [name, q] : quantizers) {
        EXPECT_EQ(q->mode, q->role == QuantRole::Weight ? QuantMode::Disabled : QuantMode::Calibrating) << name;
        if (q->role != QuantRole::Weight) continue;
        // Per channel max: amax[r] = max_c |w[r, c]|.
        const std::string weight_name = name.substr(0, name.size() - std::string("_weight_quantizer").size()) + "weight";
        Tensor w;
        for (const NamedTensor& p : model.named_parameters())
            if (p.name == weight_name) w = p.tensor;
        ASSERT_TRUE(w.defined()) << name;
        for (int64_t r = 0; r < w.size(0); ++r) {
            float m = 0;
            for (int64_t c = 0; c < w.size(1); ++c) m = std::max(m, std::fabs(w.f32()[r * w.size(1) + c]));
            EXPECT_EQ(q->amax.f32()[r], m) << name << " row " << r;
        }
    }
    Rng rng(1);
    {
        model.eval();
        NoGradGuard no_grad;
        task->train_loss({0, 1, 2, 3, 4, 5, 6, 7}, rng);
    }
    load_activation_ranges(model, {AmaxMethod::Max});
    for (auto& [name, q] : quantizers) {
        EXPECT_EQ(q->mode, QuantMode::Quantizing) << name;
        EXPECT_GT(q->amax.f32()[0], 0.0f) << name;
    }
    check_calibrated(model, "");
    // The histogram's statistics stay: another method reads them again, never above max.
    std::vector<float> max_ranges;
    for (auto& [name, q] : quantizers) max_ranges.push_back(q->amax.f32()[0]);
    load_activation_ranges(model, {AmaxMethod::Percentile, 99.0});
    for (size_t i = 0; i < quantizers.size(); ++i) {
        if (quantizers[i].second->role == QuantRole::Input) {
            EXPECT_LE(quantizers[i].second->amax.item(), max_ranges[i]);
        }
    }
}

TEST(Calibration, MaxCollectorOnlyServesTheMaxMethod) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = quantized_config(dir, "run");
    raw["quantization"]["input"] = {{"calib_method", "max"}};
    raw["quantization"]["calibrator"] = "max";
    std::unique_ptr<Task> task = make_task(parse(raw), {true, false});
    begin_calibration(task->model());
    Rng rng(1);
    task->model().eval();
    NoGradGuard no_grad;
    task->train_loss({0, 1, 2, 3}, rng);
    expect_error([&] { load_activation_ranges(task->model(), {AmaxMethod::Mse}); },
                 {"_input_quantizer", "'mse' needs calib_method histogram"});
    load_activation_ranges(task->model(), {AmaxMethod::Max});
    check_calibrated(task->model(), "");
}

namespace {

// Without all_methods, quantization.calibrator chooses: one method, the same metrics as its row
// of the full run (the same pass over the same batches).
void expect_one_method_as_in_the_full_run(const TempDir& dir, const CalibrationResult& result,
                                          const std::string& float_weights) {
    for (const auto& [calibrator, percentile, name] :
         {std::tuple{"mse", 99.99, "mse"}, std::tuple{"percentile", 99.9, "percentile-99.9"}}) {
        nlohmann::json one_raw = quantized_config(dir, std::string("one_") + calibrator);
        one_raw["model"]["init"] = float_weights;
        one_raw["quantization"]["calibrator"] = calibrator;
        one_raw["quantization"]["percentile"] = percentile;
        RunConfig one = parse(one_raw);
        std::unique_ptr<Task> one_task = make_task(one, {true, true});
        const CalibrationResult single = calibrate(one, *one_task, {.sensitivity = Sensitivity::none});
        ASSERT_EQ(single.methods.size(), 1u) << calibrator;
        EXPECT_EQ(single.best, name);
        EXPECT_FALSE(single.sensitivity);
        ASSERT_TRUE(find_method(result, name)) << name;
        EXPECT_EQ(single.methods[0].metrics, find_method(result, name)->metrics) << name;
        EXPECT_FALSE(fs::exists(dir.path() / (std::string("one_") + calibrator) / "max"));
    }
}

// QAT from a calibrated checkpoint: the ranges stay as calibrated, the weights move, and the
// checkpoints keep the ranges, so that a resumed QAT run quantizes as before.
void expect_qat_keeps_the_calibrated_ranges(const TempDir& dir, const fs::path& ranges) {
    nlohmann::json qat_raw = quantized_config(dir, "qat");
    qat_raw["model"]["init"] = ranges.string();
    qat_raw["training"]["learning_rate"] = 1e-3;
    qat_raw["training"]["max_steps"] = 4;
    RunConfig qat = parse(qat_raw);
    std::unique_ptr<Task> qat_task = make_task(qat, {true, true});
    NamedTensors before = qat_task->model().state_dict();
    for (NamedTensor& t : before) t.tensor = t.tensor.clone();
    ASSERT_EQ(train(qat, *qat_task, {}).status, TrainStatus::finished);
    NamedTensors after = qat_task->model().state_dict();
    int ranges = 0, moved = 0;
    for (size_t i = 0; i < before.size(); ++i) {
        const bool same = std::equal(before[i].tensor.f32(), before[i].tensor.f32() + before[i].tensor.numel(),
                                     after[i].tensor.f32());
        if (before[i].name.find("_amax") != std::string::npos) {
            ++ranges;
            EXPECT_TRUE(same) << before[i].name;
        } else if (!same) {
            ++moved;
        }
    }
    EXPECT_EQ(ranges, 20);
    EXPECT_GT(moved, 10);
    EXPECT_EQ(load_checkpoint(list_checkpoints((dir.path() / "qat").string()).back()).model.size(), before.size());
}

}  // namespace

TEST(Calibrate, WritesCheckpointsThatEvaluateToTheReportedMetricsAndQatStartsFromThem) {
    TempDir dir;
    write_task_files(dir);
    // A float model first.
    RunConfig fp32 = parse(tiny_config(dir, "fp32"));
    std::unique_ptr<Task> fp32_task = make_task(fp32, {true, true});
    ASSERT_EQ(train(fp32, *fp32_task, {}).status, TrainStatus::finished);
    const std::string float_weights = (dir.path() / "fp32" / "model.h5").string();

    nlohmann::json raw = quantized_config(dir, "calib");
    raw["model"]["init"] = float_weights;
    RunConfig config = parse(raw);
    std::unique_ptr<Task> task = make_task(config, {true, true});
    const CalibrationResult result = calibrate(config, *task, {.all_methods = true});
    EXPECT_EQ(result.fp32.scores.at("accuracy"), fp32_task->evaluate(16).scores.at("accuracy"));
    ASSERT_EQ(result.methods.size(), 6u);
    ASSERT_TRUE(result.sensitivity);
    ASSERT_EQ(result.sensitivity->rows.size(), 1u);  // one layer
    EXPECT_EQ(result.quantizers.size(), 20u);
    EXPECT_GT(result.cost.plain_pass_seconds, 0.0);
    const fs::path out = dir.path() / "calib";
    for (const char* file : {"calibration.json", "calibration_report.md", "plots/metric_by_method.svg"})
        EXPECT_TRUE(fs::exists(out / file)) << file;
    // calibration.json reads back to what calibrate returned.
    const std::string written = (out / "calibration.json").string();
    EXPECT_EQ(calibration_result_to_json(calibration_result_from_json(read_json_file(written), "", written)),
              calibration_result_to_json(result));

    for (const CalibratedMethod& m : result.methods) {
        // A fresh quantized model from the method's checkpoint evaluates to what calibrate saw.
        nlohmann::json eval_raw = quantized_config(dir, "eval");
        eval_raw["model"]["init"] = m.checkpoint;
        std::unique_ptr<Task> fresh = make_task(parse(eval_raw), {false, true});
        check_calibrated(fresh->model(), "");
        EXPECT_EQ(fresh->evaluate(16), m.metrics) << m.name;
    }

    expect_one_method_as_in_the_full_run(dir, result, float_weights);
    expect_qat_keeps_the_calibrated_ranges(dir, out / "percentile-99.99" / "ranges.h5");

    // QAT from float weights has no ranges to start from.
    nlohmann::json bad = quantized_config(dir, "qat_from_float");
    bad["model"]["init"] = float_weights;
    RunConfig bad_config = parse(bad);
    std::unique_ptr<Task> bad_task = make_task(bad_config, {true, true});
    expect_error([&] { train(bad_config, *bad_task, {}); }, {"has no range", "qdqtrain calibrate"});
}

TEST(Calibrate, NeedsAQuantizationSection) {
    TempDir dir;
    write_task_files(dir);
    RunConfig config = parse(tiny_config(dir, "run"));
    std::unique_ptr<Task> task = make_task(config, {true, true});
    expect_error([&] { calibrate(config, *task, {}); }, {"test.json", "\"quantization\" section"});
}

TEST(SvgPlots, AreWellFormedXmlWithEscapedText) {
    TempDir dir;
    const std::string hist = (dir.path() / "h.svg").string(), bars = (dir.path() / "b.svg").string(),
                      lines = (dir.path() / "l.svg").string();
    write_svg(hist, svg_histogram("x < 1 & \"y\"", "|x|", 0.5, {0, 10, 1000, 3, 0, 1}, {{"max", 2.9}, {"mse", 1.4}}));
    write_svg(bars, svg_bar_chart("accuracy", "%", {"fp32", "percentile-99.999", "QAT (from mse)"}, {80.1, 79.5, 80.3}));
    write_svg(lines, svg_line_chart("loss", "step", "loss", {{"train", {0, 10, 20}, {9.0, 7.5, 6.9}}, {"eval", {20}, {7.0}}}));
    const std::string title = svg_histogram("x < 1 & \"y\"", "|x|", 0.5, {1}, {});
    EXPECT_NE(title.find("x &lt; 1 &amp; &quot;y&quot;"), std::string::npos);
    // An independent XML parser reads every file (python3's, where there is one).
    if (std::system("/usr/bin/python3 -c 'import xml.etree.ElementTree' 2>/dev/null") != 0)
        GTEST_SKIP() << "no /usr/bin/python3 to parse the SVG files";
    for (const std::string& file : {hist, bars, lines})
        EXPECT_EQ(std::system(("/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' " + file).c_str()), 0)
            << file;
}
