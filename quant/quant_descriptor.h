// How one tensor is quantized: PQ's QuantDescriptor (pytorch_quantization/tensor_quant.py), minus
// the fields this project has no use for (name, fake_quant, scale_amax, FP8 num_bits).
//
// The defaults are PQ's ScaledQuantDescriptor defaults, field for field:
//   num_bits 8, axis none (per tensor), unsigned false, narrow_range false, calib_method "max",
//   amax none, learn_amax false.
// narrow_range: PQ's *descriptor* defaults to false (range [-128, 127]) although its functions
// fake_tensor_quant/_tensor_quant default to true and its CUDA kernel always clips at -127. We
// take the descriptor's false: it is what a QuantDescriptor() in QDQBERT asks for, what PQ's CPU
// path computes, and what ONNX export requires (PQ's exporter asserts !narrow_range for int8).
//
// QDQBERT's layers are PQ QuantLinear, whose defaults are
//   inputs  QUANT_DESC_8BIT_PER_TENSOR           = QuantDescriptor{}            (calib "max")
//   weights QUANT_DESC_8BIT_LINEAR_WEIGHT_PER_ROW = linear_weight_descriptor()  (axis 0 of [out, in])
// HF's QDQBERT recipe (quant_trainer.py) switches the inputs to calib_method "histogram" when
// --calibrator is percentile or mse; weights stay per-channel max.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace qdq {

enum class CalibMethod { Max, Histogram };

struct QuantDescriptor {
    int num_bits = 8;
    // Per-channel axis (negative counts from the end); none = one amax for the whole tensor.
    std::optional<int64_t> axis{};
    bool unsigned_ = false;     // [0, 2^bits - 1] instead of the signed range
    bool narrow_range = false;  // signed range [-(2^(bits-1) - 1), ...] instead of [-2^(bits-1), ...]
    CalibMethod calib_method = CalibMethod::Max;
    // A fixed amax instead of a calibrated one: one value, or one per channel (a single value
    // then serves every channel). With learn_amax it is the learned amax's initial value.
    std::optional<std::vector<float>> amax{};
    bool learn_amax = false;  // PACT-style learned range; per tensor only, as in PQ
    // LSQ's learned step size (amax / bound), per tensor or per channel: not in PQ (see
    // quant/fake_quant.h). Excludes learn_amax.
    bool learn_step_size = false;
};

// PQ's QUANT_DESC_8BIT_LINEAR_WEIGHT_PER_ROW: one amax per output row of a Linear weight [out, in].
QuantDescriptor linear_weight_descriptor();

const char* calib_method_name(CalibMethod method);

// Throws naming the first inconsistent field: num_bits outside [2, 16], a negative or
// non-finite amax, learn_amax or histogram calibration with an axis (PQ rejects both),
// learn_amax together with learn_step_size.
void validate(const QuantDescriptor& desc);

// JSON keys as PQ's keyword arguments: {"num_bits": 8, "axis": 0 | null, "unsigned": false,
// "narrow_range": false, "calib_method": "max" | "histogram", "amax": 2.5 | [..] | null,
// "learn_amax": false, "learn_step_size": false}. Every key is optional: a missing one keeps
// its value in `defaults` (PQ's QuantDescriptor() unless given); unknown keys and wrong types
// are errors naming the key (under `path`, its dotted place in `source`). to_json writes every key.
QuantDescriptor quant_descriptor_from_json(const nlohmann::json& j, const std::string& source,
                                           const std::string& path = "", const QuantDescriptor& defaults = {});
void from_json(const nlohmann::json& j, QuantDescriptor& desc);  // source "quant descriptor"
void to_json(nlohmann::json& j, const QuantDescriptor& desc);

}  // namespace qdq
