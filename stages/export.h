// `qdqtrain export`: a trained task model as an ONNX file (onnx/onnx_export.h). The model is built
// as the run config describes it, so the head, num_labels and the quantizers are the task's: with
// a "quantization" section the checkpoint's ranges (a calibrated or QAT checkpoint) become
// QuantizeLinear → DequantizeLinear pairs at exactly the quantizers the training graph had;
// without one the export is float.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnx/onnx_export.h"
#include "trainers/run_config.h"
#include "trainers/task.h"

namespace qdq {

// Throws std::invalid_argument naming the config key when the ONNX export cannot write what
// `config` describes: a task other than classification and squad, or quantizers other than
// 8-bit signed with narrow_range false (onnx/onnx_export.h writes int8 Q/DQ, scale amax/127, range
// [-128, 127]: a narrow range would need a Clip, opset 13 has no other widths, and unsigned
// ranges are not written), or weight ranges per channel over any axis but the output rows.
void check_onnx_exportable(const RunConfig& config);
// The same check as a yes or no.
bool onnx_exportable(const RunConfig& config);

// Builds the task's model from `config` (no data is read), loads `checkpoint` (a checkpoint,
// model.h5, .safetensors or a Hugging Face directory), checks that every quantizer has a range,
// and writes the ONNX model to `out_path`. A range in the checkpoint that the model has no
// quantizer for (a config without the run's "quantization" section) is an error, not dropped.
// Returns a summary: {"onnx": out_path, "target", "outputs": [...], "quantizers": count}.
nlohmann::json export_task_onnx(const RunConfig& config, const std::string& checkpoint, const std::string& out_path,
                                 QdqTarget target);

// The outputs of the model export_task_onnx exports from `checkpoint`, computed by the framework
// for `batches`: what the exported model's outputs are compared with.
std::vector<NamedOutputs> framework_outputs(const RunConfig& config, const std::string& checkpoint,
                                            const std::vector<nn::BertInputs>& batches);

// The model export_task_onnx wrote to `onnx_path` from `checkpoint`, checked against the
// framework's on the first `examples` of the config's evaluation set (stages/onnx_fidelity.h): writes
// the report to <onnx_path>.fidelity.md and returns its summary, with the report's path.
nlohmann::json check_exported_onnx(const RunConfig& config, const std::string& checkpoint, const std::string& onnx_path,
                                   int64_t examples);

}  // namespace qdq
