#include "stages/accuracy_budget.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "autograd/matmul_precision.h"
#include "parallel/communicator.h"
#include "stages/calibrate.h"
#include "trainers/checkpoint.h"
#include "trainers/run_precision.h"
#include "trainers/sharded_evaluation.h"
#include "trainers/task.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

using Quantizers = std::vector<std::pair<std::string, TensorQuantizer*>>;

// The quantizers of one sweep row: "layer N" is every quantizer of encoder layer N, any other
// row one quantizer by its full name.
std::vector<std::pair<std::string, TensorQuantizer*>> quantizers_of(const std::string& row, const Quantizers& all) {
    const bool layer = row.rfind("layer ", 0) == 0;
    const std::string tag = layer ? "encoder.layer." + row.substr(6) + "." : row;
    Quantizers out;
    for (const auto& named : all)
        if (layer ? named.first.find(tag) != std::string::npos : named.first == tag) out.push_back(named);
    return out;
}

// The rows most sensitive first: the metric with the row in float, highest first.
std::vector<SensitivityRow> by_sensitivity(std::vector<SensitivityRow> rows) {
    std::stable_sort(rows.begin(), rows.end(),
                     [](const SensitivityRow& a, const SensitivityRow& b) { return a.value > b.value; });
    return rows;
}

// The chosen method's checkpoint config, with the float set disabled, and its quantizers' state
// without their ranges: what QAT starts from. Like the method's, the file holds ranges over the
// calibration's float weights; over a method checkpoint from before those were kept apart, which
// holds them itself, it holds the whole state as that one does.
void save_budget_checkpoint(nn::Module& model, const std::string& method_checkpoint, const AccuracyBudgetResult& r) {
    RunConfig config = checkpoint_run_config(method_checkpoint).value();
    for (const std::string& pattern : exact_name_patterns(r.float_quantizers))
        config.quantization.value().disable.push_back(pattern);
    const std::string weights = checkpoint_weights_file(method_checkpoint);
    NamedTensors state = weights.empty() ? model.state_dict() : split_quantizer_state(model).quantizers;
    std::erase_if(state, [&](const NamedTensor& t) {
        return std::any_of(r.float_quantizers.begin(), r.float_quantizers.end(),
                           [&](const std::string& q) { return t.name == q + "._amax"; });
    });
    const fs::path dir = fs::path(r.checkpoint).parent_path();
    fs::create_directories(dir);
    save_checkpoint(r.checkpoint, {state, {}, {}, config, weights.empty() ? "" : fs::relative(weights, dir).string()});
}

}  // namespace

FloatSetSearch search_float_set(const std::vector<SensitivityRow>& sweep, double initial_loss, double budget,
                                const std::function<double(const std::string& row)>& loss_after_adding) {
    FloatSetSearch search{.loss = initial_loss};
    for (const SensitivityRow& row : by_sensitivity(sweep)) {
        if (search.loss <= budget) break;
        search.loss = loss_after_adding(row.left_in_float);
        search.rows.push_back(row.left_in_float);
    }
    search.held = search.loss <= budget;
    return search;
}

std::vector<std::string> exact_name_patterns(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const std::string& name : names) {
        std::string pattern = "^";
        for (char c : name) {
            if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) pattern += '\\';
            pattern += c;
        }
        out.push_back(pattern + "$");
    }
    return out;
}

AccuracyBudgetResult fit_accuracy_budget(const RunConfig& calibrate, const CalibrationResult& calibration,
                                         const std::string& method_name, double budget) {
    const std::string where = calibrate.source + ": pipeline.accuracy_budget";
    if (!calibration.sensitivity)
        throw std::runtime_error(where + " leaves quantizers in float by calibrate's sensitivity sweep: "
                                         "pipeline.sensitivity must be layers or quantizers");
    if (calibration.metric.ends_with("loss"))
        throw std::runtime_error(where + " counts points of a metric that grows as the model improves, not " +
                                 calibration.metric);
    const CalibratedMethod* method = find_method(calibration, method_name);
    if (!method) throw std::runtime_error(where + ": calibration holds no method '" + method_name + "'");
    RunConfig c = calibrate;
    c.model.init = method->checkpoint;
    MatmulPrecisionGuard precision(eval_matmul_precision(c));
    std::unique_ptr<Task> task = make_task(c, {.train = false, .eval = true});
    const Quantizers quantizers = task->model().named_quantizers();
    const int64_t batch_size = c.training.per_device_eval_batch_size;
    const std::string& metric = calibration.metric;
    const bool split = c.data.validation_fraction > 0;
    // With a validation split the sweep ranked on its first half and the loss is checked on the
    // second, where FP32 and the method are measured again.
    if (split) task->select_eval_set(EvalSplit::ValidationChecking);
    AccuracyBudgetResult r{.budget = budget, .method = method_name};
    r.checkpoint = c.training.output_dir + "/budget/ranges.h5";
    if (split) r.validation_fp32 = float_metrics(*task, batch_size);
    const double fp32 = r.validation_fp32.value_or(calibration.fp32).percent(metric);
    Metrics checked = split ? evaluate_on_ranks(*task, batch_size) : method->metrics;
    const FloatSetSearch search =
        search_float_set(calibration.sensitivity->rows, fp32 - checked.percent(metric), budget, [&](const std::string& row) {
            for (const auto& [name, q] : quantizers_of(row, quantizers)) {
                q->mode = QuantMode::Disabled;
                r.float_quantizers.push_back(name);
            }
            checked = evaluate_on_ranks(*task, batch_size);
            return fp32 - checked.percent(metric);
        });
    r.left_in_float = search.rows;
    r.loss = search.loss;
    r.held = search.held;
    if (split) {
        r.validation = checked;
        task->select_eval_set(EvalSplit::Test);
        r.metrics = evaluate_on_ranks(*task, batch_size);
    } else {
        r.metrics = checked;
    }
    if (world().is_root()) save_budget_checkpoint(task->model(), method->checkpoint, r);
    barrier();
    return r;
}

}  // namespace qdq
