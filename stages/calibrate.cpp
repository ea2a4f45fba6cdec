#include "stages/calibrate.h"

#include <algorithm>
#include <ctime>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>

#include "autograd/tape.h"
#include "json/json_file.h"
#include "parallel/communicator.h"
#include "parallel/root_line.h"
#include "qdqbert/calibration.h"
#include "qdqbert/qdq_placement.h"
#include "quant/range_stats.h"
#include "report/calibration_report.h"
#include "trainers/checkpoint.h"
#include "trainers/progress_bar.h"
#include "trainers/run_precision.h"
#include "trainers/sharded_evaluation.h"
#include "trainers/trainer.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

// Process CPU time: on a shared machine the ratio of two passes in wall time would also measure
// who else held the cores meanwhile.
double now_seconds() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Batches of the calibration examples, longest first as in evaluation (little padding).
std::vector<std::vector<int64_t>> calibration_batches(Task& task, int64_t count, int64_t batch_size) {
    std::vector<size_t> chosen = example_subset((size_t)task.train_size(), count);
    std::vector<int32_t> all_lengths = task.train_lengths(), lengths;
    for (size_t i : chosen) lengths.push_back(all_lengths[i]);
    std::vector<std::vector<int64_t>> batches = eval_batches(lengths, batch_size);
    for (auto& batch : batches)
        for (int64_t& i : batch) i = (int64_t)chosen[(size_t)i];
    return batches;
}

// The forward pass of training batches in eval mode (no dropout) without the tape, under a
// progress bar named `label`; returns seconds.
double forward_pass(Task& task, const std::vector<std::vector<int64_t>>& batches, uint64_t seed, const char* label) {
    nn::Module& model = task.model();
    const bool was_training = model.is_training();
    model.eval();
    NoGradGuard no_grad;
    Rng rng(seed);  // MLM masking; classification and SQuAD draw nothing
    ProgressBar bar(label, (int64_t)batches.size());
    double start = now_seconds();
    for (size_t b = 0; b < batches.size(); ++b) {
        task.train_loss(batches[b], rng);
        bar.update((int64_t)b + 1);
    }
    double seconds = now_seconds() - start;
    model.train(was_training);
    return seconds;
}

// The calibration batches this rank runs: all of them in one process. Data parallel, every rank
// runs the first, whose maxima set each histogram's bin width, and its share of the rest, every
// N-th.
std::vector<std::vector<int64_t>> rank_batches(const std::vector<std::vector<int64_t>>& batches) {
    const World& w = world();
    if (w.size == 1) return batches;
    std::vector<std::vector<int64_t>> mine = {batches.front()};
    for (size_t b = 1; b < batches.size(); ++b)
        if ((int)(b % (size_t)w.size) == w.rank) mine.push_back(batches[b]);
    return mine;
}

// Collects this rank's batches (rank_batches); data parallel, ranks other than 0 keep the
// first batch's bins but not its counts, and the ranks' statistics are then merged
// (qdqbert/calibration.h). Returns this rank's seconds.
double collect_pass(Task& task, const std::vector<std::vector<int64_t>>& mine, uint64_t seed) {
    if (world().size == 1) return forward_pass(task, mine, seed, "calibrate");
    double seconds = forward_pass(task, {mine.front()}, seed, "calibrate");
    if (!world().is_root()) drop_collected_counts(task.model());
    seconds += forward_pass(task, {mine.begin() + 1, mine.end()}, seed, "calibrate");
    merge_collected(task.model());
    return seconds;
}

ActivationHistogram histogram_of(const HistogramCalibrator& calib) {
    // At most 512 bars: enough to see the shape and the tail, small enough to keep in the JSON.
    const size_t bins = calib.counts.size(), merge = (bins + 511) / 512;
    std::vector<int64_t> counts((bins + merge - 1) / merge, 0);
    for (size_t i = 0; i < bins; ++i) counts[i / merge] += calib.counts[i];
    return {(double)calib.width * (double)merge, counts, calib.max};
}

using Quantizers = std::vector<std::pair<std::string, TensorQuantizer*>>;

// Evaluates with the quantizers matching `left_in_float` disabled, then re-enables them.
Metrics evaluate_without(Task& task, const Quantizers& quantizers,
                         const std::function<bool(const std::string&)>& left_in_float, int64_t batch_size) {
    for (auto& [name, q] : quantizers)
        if (left_in_float(name)) q->mode = QuantMode::Disabled;
    Metrics metrics = evaluate_on_ranks(task, batch_size);
    for (auto& [name, q] : quantizers) q->mode = QuantMode::Quantizing;
    return metrics;
}

// Each quantizer after the collecting pass: a weight's range, clipped fraction and SQNR; an
// activation's histogram.
std::vector<QuantizerStats> quantizer_stats(const Quantizers& quantizers) {
    std::vector<QuantizerStats> stats;
    for (auto& [name, q] : quantizers) {
        QuantizerStats entry{.name = name};
        if (q->role == QuantRole::Weight) {
            RangeStats s = tensor_range_stats(q->weight, q->amax, quant_params(q->desc));
            const std::vector<float> a = q->amax.to_vector();
            entry.weight = WeightRangeStats{*std::max_element(a.begin(), a.end()), *std::min_element(a.begin(), a.end()),
                                            s.clipped_fraction, s.sqnr_db};
        } else if (const auto* h = std::get_if<HistogramCalibrator>(&q->calibrator)) {
            entry.histogram = histogram_of(*h);
        }
        stats.push_back(entry);
    }
    return stats;
}

// Each activation quantizer's range under the method just loaded, with its clipping and SQNR.
void add_method_stats(std::vector<QuantizerStats>& stats, const Quantizers& quantizers, const std::string& method) {
    for (size_t i = 0; i < quantizers.size(); ++i) {
        TensorQuantizer& q = *quantizers[i].second;
        const auto* h = std::get_if<HistogramCalibrator>(&q.calibrator);
        if (q.role == QuantRole::Weight || !h) continue;
        RangeStats s = histogram_range_stats(*h, q.amax.item());
        stats[i].methods[method] = {q.amax.item(), s.clipped_fraction, s.sqnr_db};
    }
}

// The sweep: the metric with each layer's (or each) quantizer left in float in turn.
std::vector<SensitivityRow> sensitivity_rows(Task& task, const Quantizers& quantizers, Sensitivity mode,
                                             const std::string& metric, int64_t batch_size, const std::string& source) {
    std::vector<SensitivityRow> rows;
    if (mode == Sensitivity::layers) {
        for (size_t i = 0; i < task.encoder().layers.size(); ++i) {
            const std::string tag = "encoder.layer." + std::to_string(i) + ".";
            Metrics metrics = evaluate_without(
                task, quantizers, [&](const std::string& n) { return n.find(tag) != std::string::npos; }, batch_size);
            rows.push_back({"layer " + std::to_string(i), metrics.value(metric, source)});
        }
        return rows;
    }
    for (auto& [name, q] : quantizers) {
        Metrics metrics = evaluate_without(task, quantizers, [&](const std::string& n) { return n == name; }, batch_size);
        rows.push_back({name, metrics.value(metric, source)});
    }
    return rows;
}

// The model as it is, on the test set and, with a validation split, on validation (which the
// task is left on).
TestAndValidation evaluate_both(Task& task, bool split, int64_t batch_size) {
    if (!split) return {evaluate_on_ranks(task, batch_size), std::nullopt};
    const Metrics validation = evaluate_on_ranks(task, batch_size);
    task.select_eval_set(EvalSplit::Test);
    const Metrics test = evaluate_on_ranks(task, batch_size);
    task.select_eval_set(EvalSplit::Validation);
    return {test, validation};
}

// The method whose ranges the sweep keeps for the rest, and its metric: options.sweep_method,
// else the best.
std::pair<CalibrationMethod, double> sweep_method(const CalibrationResult& result, const CalibrateOptions& options,
                                                  const CalibrationMethod& best, double best_value,
                                                  const std::string& metric, const std::string& source) {
    if (!options.sweep_method || *options.sweep_method == result.best) return {best, best_value};
    for (const CalibrationMethod& m : standard_calibration_methods()) {
        if (calibration_method_name(m) != *options.sweep_method) continue;
        const CalibratedMethod* done = find_method(result, *options.sweep_method);
        if (!done) break;
        return {m, done->validation.value_or(done->metrics).value(metric, source)};
    }
    throw std::runtime_error(source + ": the sensitivity sweep's method '" + *options.sweep_method +
                             "' was not calibrated");
}

// The sensitivity sweep under the ranges loaded now. With a validation split it runs on
// validation's first half, FP32 measured there too, so that the accuracy budget can check its
// loss on the second; the task is left on validation.
SensitivitySweep sweep_sensitivity(Task& task, const std::string& method, double baseline, Sensitivity by, bool split,
                                   const std::string& metric, int64_t batch_size, const std::string& source) {
    SensitivitySweep sweep{.method = method, .baseline = baseline};
    if (split) {
        task.select_eval_set(EvalSplit::ValidationRanking);
        sweep.baseline = evaluate_on_ranks(task, batch_size).value(metric, source);
        sweep.fp32 = float_metrics(task, batch_size).value(metric, source);
    }
    sweep.rows = sensitivity_rows(task, task.model().named_quantizers(), by, metric, batch_size, source);
    if (split) task.select_eval_set(EvalSplit::Validation);
    return sweep;
}

// <out_dir>/model.h5: the float weights every method's ranges file names (save_method_ranges),
// stored once; calibration changes no weight. Its config has no quantization section: the
// file alone is the float model.
void save_float_weights(const RunConfig& config, Task& task, const std::string& out_dir) {
    RunConfig float_config = saved_run_config(config, task);
    float_config.quantization.reset();
    save_checkpoint(out_dir + "/model.h5", {split_quantizer_state(task.model()).weights, {}, {}, float_config},
                    Hdf5Storage::Compressed);
}

// <out_dir>/<method>/ranges.h5, returned: the state of every quantizer under method `m` (weights'
// too: apply_range_options may change their ranges) over ../model.h5, with the config that
// calibrated it. Written by the root rank; the path is every rank's.
std::string save_method_ranges(const RunConfig& config, Task& task, const CalibrationMethod& m,
                               const std::string& out_dir) {
    QuantizationConfig saved = *config.quantization;
    saved.calibrator = m;
    RunConfig saved_config = saved_run_config(config, task);
    saved_config.quantization = saved;
    const std::string dir = out_dir + "/" + calibration_method_name(m), path = dir + "/ranges.h5";
    if (world().is_root()) {
        fs::create_directories(dir);
        save_checkpoint(path, {split_quantizer_state(task.model()).quantizers, {}, {}, saved_config, "../model.h5"});
    }
    return path;
}

}  // namespace

Metrics float_metrics(Task& task, int64_t batch_size) {
    const Quantizers quantizers = task.model().named_quantizers();
    std::vector<QuantMode> modes;
    for (const auto& [name, q] : quantizers) {
        modes.push_back(q->mode);
        q->mode = QuantMode::Disabled;
    }
    const Metrics metrics = evaluate_on_ranks(task, batch_size);
    for (size_t i = 0; i < quantizers.size(); ++i) quantizers[i].second->mode = modes[i];
    return metrics;
}

std::vector<CalibrationMethod> methods_to_calibrate(const QuantizationConfig& config, bool all_methods) {
    if (all_methods) return standard_calibration_methods();
    return {config.calibrator};
}

CalibrationResult calibrate(const RunConfig& config, Task& task, const CalibrateOptions& options) {
    if (!config.quantization) throw ConfigError(config.source + ": calibrate needs a \"quantization\" section");
    const QuantizationConfig& qc = *config.quantization;
    MatmulPrecisionGuard precision(eval_matmul_precision(config));
    nn::Module& model = task.model();
    const Quantizers quantizers = model.named_quantizers();
    if (quantizers.empty()) throw ConfigError(config.source + ": the quantization section attaches no quantizer");
    const std::string checkpoint = config.model.init;
    if (checkpoint.empty()) throw ConfigError(config.source + ": calibrate needs the float weights as model.init");
    const std::string out_dir = options.out_dir.empty() ? config.training.output_dir : options.out_dir;
    fs::create_directories(out_dir + "/plots");
    const TrainingSettings& t = config.training;
    const int64_t batch_size = t.per_device_eval_batch_size;
    const std::string metric = t.metric_for_best_model.empty() ? task.main_metric() : t.metric_for_best_model;

    CalibrationResult result{.checkpoint = checkpoint, .metric = metric, .quantization = qc};
    // With a validation split the method is chosen on validation, and the sensitivity swept on
    // its first half.
    const bool split = config.data.validation_fraction > 0;
    set_quant_mode(model, QuantMode::Disabled);
    const TestAndValidation fp32 = evaluate_both(task, split, batch_size);
    result.fp32 = fp32.test;
    result.fp32_validation = fp32.validation;
    root_line() << "calibrate: fp32 " << metric << " " << result.fp32.value(metric, config.source) << "\n";

    // The plain pass first, over the very batches calibration reads: the cost's denominator.
    const auto batches = calibration_batches(task, qc.calibration_examples, batch_size);
    const auto mine = rank_batches(batches);
    const double plain_seconds = forward_pass(task, mine, t.seed, "timing pass");
    begin_calibration(model);
    const double collect_seconds = collect_pass(task, mine, t.seed);
    if (world().is_root()) save_float_weights(config, task, out_dir);
    result.quantizers = quantizer_stats(quantizers);

    double ranges_seconds = 0;
    std::optional<CalibrationMethod> best;
    double best_value = 0;
    for (const CalibrationMethod& m : methods_to_calibrate(qc, options.all_methods)) {
        const std::string name = calibration_method_name(m);
        double start = now_seconds();
        load_activation_ranges(model, m);
        apply_range_options(task.encoder(), qc);
        ranges_seconds += now_seconds() - start;
        add_method_stats(result.quantizers, quantizers, name);
        const TestAndValidation metrics = evaluate_both(task, split, batch_size);
        const double value = metrics.validation.value_or(metrics.test).value(metric, config.source);
        root_line() << "calibrate: " << name << " " << metric << " " << value << (split ? " (validation)\n" : "\n");
        result.methods.push_back({name, metrics.test, save_method_ranges(config, task, m, out_dir), metrics.validation});
        if (!best || is_improvement(t, metric, value, best_value)) best = m, best_value = value;
    }
    result.best = calibration_method_name(*best);
    result.cost = {.calibration_examples = qc.calibration_examples,
                   .batches = (int64_t)batches.size(),
                   .plain_pass_seconds = plain_seconds,
                   .collect_seconds = collect_seconds,
                   .collect_ratio = collect_seconds / plain_seconds,
                   .ranges_seconds_all_methods = ranges_seconds,
                   .total_ratio = (collect_seconds + ranges_seconds) / plain_seconds};

    if (options.sensitivity != Sensitivity::none) {
        const auto [swept, baseline] = sweep_method(result, options, *best, best_value, metric, config.source);
        load_activation_ranges(model, swept);
        apply_range_options(task.encoder(), qc);
        result.sensitivity = sweep_sensitivity(task, calibration_method_name(swept), baseline, options.sensitivity, split,
                                               metric, batch_size, config.source);
    }
    if (world().is_root()) {
        write_json_file(out_dir + "/calibration.json", calibration_result_to_json(result));
        write_calibration_report(out_dir, result);
    }
    barrier();  // the files exist for every rank once calibrate returns
    return result;
}

}  // namespace qdq
