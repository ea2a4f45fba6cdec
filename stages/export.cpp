#include "stages/export.h"

#include <fstream>
#include <iostream>
#include <stdexcept>

#include "nn/pretrained.h"
#include "nn/state_dict.h"
#include "qdqbert/calibration.h"
#include "qdqbert/qdq_placement.h"
#include "stages/onnx_fidelity.h"
#include "trainers/checkpoint.h"
#include "trainers/task.h"

namespace qdq {

namespace {

OnnxHead onnx_head(const RunConfig& config) {
    switch (config.data.task) {
    case TaskKind::classification: return OnnxHead::SequenceClassification;
    case TaskKind::squad: return OnnxHead::QuestionAnswering;
    case TaskKind::mlm: break;
    }
    throw ConfigError(config.source + ": data.task '" + name_of_choice(config.data.task, kTaskKindNames) +
                      "' has no ONNX export (classification and squad have)");
}

void check_descriptor(const QuantDescriptor& desc, const std::string& key) {
    auto reject = [&](const std::string& what) {
        throw ConfigError(key + "." + what +
                          ": ONNX export writes only 8-bit signed quantizers with narrow_range false "
                          "(QuantizeLinear's int8 range [-128, 127])");
    };
    if (desc.num_bits != 8) reject("num_bits is " + std::to_string(desc.num_bits));
    if (desc.narrow_range) reject("narrow_range is true");
    if (desc.unsigned_) reject("unsigned is true");
}

// The weights as load_model_weights reads them, except that a range the model has no quantizer
// for is an error, not a warning: the export would leave that quantizer out without a word.
void load_weights_keeping_ranges(nn::Module& model, const std::string& path, const RunConfig& config) {
    const nn::LoadReport report = !checkpoint_run_config(path)
                                      ? nn::load_pretrained_weights(model, path)
                                      : nn::load_state_dict(model, load_checkpoint(path).model, path);
    std::vector<std::string> dropped;
    for (const std::string& key : report.unexpected)
        if (key.ends_with("._amax")) dropped.push_back(key);
    if (!dropped.empty())
        throw std::invalid_argument(path + " holds " + std::to_string(dropped.size()) + " quantizer ranges (" +
                                    dropped[0] + ", ...) that the model of " + config.source +
                                    " has no quantizer for: its \"quantization\" section is missing or disables "
                                    "them, and the export would drop them");
    const std::string summary = report.summary();
    if (!summary.empty()) std::cerr << summary;
}

// load_weights_keeping_ranges of `path`, as make_task's loader.
ModelLoader keeping_ranges(const std::string& path, const RunConfig& config) {
    return [&path, &config](nn::Module& model) { load_weights_keeping_ranges(model, path, config); };
}

}  // namespace

void check_onnx_exportable(const RunConfig& config) {
    onnx_head(config);
    if (!config.quantization) return;
    const QuantizationConfig& q = *config.quantization;
    check_descriptor(q.input, config.source + ": quantization.input");
    check_descriptor(q.weight, config.source + ": quantization.weight");
    // export_onnx refuses ranges over axis 1 ([1, in]) by their shape; here the key is named.
    if (q.weight.axis && *q.weight.axis != 0 && *q.weight.axis != -2)
        throw ConfigError(config.source + ": quantization.weight.axis is " + std::to_string(*q.weight.axis) +
                          ": ONNX export writes weight ranges per tensor or per output row (axis 0) only");
}

bool onnx_exportable(const RunConfig& config) {
    try {
        check_onnx_exportable(config);
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

nlohmann::json export_task_onnx(const RunConfig& config, const std::string& checkpoint, const std::string& out_path,
                                 QdqTarget target) {
    check_onnx_exportable(config);
    const RunConfig for_checkpoint = config_for_checkpoint(config, checkpoint);
    std::unique_ptr<Task> task = make_task(for_checkpoint, {.train = false, .eval = false, .on_run_device = false},
                                           keeping_ranges(checkpoint, config));
    check_calibrated(task->model(), "export a checkpoint written by 'qdqtrain calibrate' or a QAT run, or a config "
                                    "without a \"quantization\" section for a float export");
    const OnnxHead head = onnx_head(config);
    OnnxExportOptions options{.target = target};
    if (const std::optional<QuantizationConfig>& q = config.quantization) {
        options.clip_inputs_to_amax = q->input.learn_amax;
        options.clip_weights_to_amax = q->weight.learn_amax;
    }
    export_onnx(task->model().state_dict(), task->model_config(), head, options, out_path);
    const nlohmann::json outputs = head == OnnxHead::SequenceClassification
                                       ? nlohmann::json::array({"logits"})
                                       : nlohmann::json::array({"start_logits", "end_logits"});
    return {{"onnx", out_path},
            {"target", qdq_target_name(target)},
            {"outputs", outputs},
            {"quantizers", task->model().named_quantizers().size()}};
}

std::vector<NamedOutputs> framework_outputs(const RunConfig& config, const std::string& checkpoint,
                                            const std::vector<nn::BertInputs>& batches) {
    const RunConfig for_checkpoint = config_for_checkpoint(config, checkpoint);
    std::unique_ptr<Task> task =
        make_task(for_checkpoint, {.train = false, .eval = false}, keeping_ranges(checkpoint, config));
    return task->eval_outputs(batches);
}

nlohmann::json check_exported_onnx(const RunConfig& config, const std::string& checkpoint, const std::string& onnx_path,
                                   int64_t examples) {
    const RunConfig for_checkpoint = config_for_checkpoint(config, checkpoint);
    std::unique_ptr<Task> task =
        make_task(for_checkpoint, {.train = false, .on_run_device = false}, keeping_ranges(checkpoint, config));
    const FidelityReport report = check_onnx_fidelity(*task, onnx_path, {.examples = examples});
    const std::string path = onnx_path + ".fidelity.md";
    std::ofstream out(path, std::ios::trunc);
    out << fidelity_markdown(report);
    if (!out.flush()) throw std::runtime_error(path + ": cannot write");
    nlohmann::json summary = fidelity_summary(report);
    summary["report"] = path;
    return summary;
}

}  // namespace qdq
