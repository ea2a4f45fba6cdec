// Where a quantized model is deployed, which decides the form of its Q/DQ pairs in the export
// (onnx/onnx_export.h): TensorRT takes symmetric int8 only; ONNX Runtime's x86 kernels prefer
// uint8 activations. A run's config names it (pipeline.onnx_target) without the trainer
// linking the exporter.
#pragma once

#include <utility>

#include "json/json_fields.h"

namespace qdq {

enum class QdqTarget { TensorRT, OnnxRuntimeCpu };

// The targets by the names configs and the command line use.
inline constexpr std::pair<const char*, QdqTarget> kQdqTargetNames[] = {{"tensorrt", QdqTarget::TensorRT},
                                                                         {"onnxruntime-cpu", QdqTarget::OnnxRuntimeCpu}};

inline const char* qdq_target_name(QdqTarget target) { return name_of_choice(target, kQdqTargetNames); }

}  // namespace qdq
