// TensorQuantizer: what a quantized layer owns per quantized tensor (PQ's
// nn/modules/tensor_quantizer.py): a descriptor, one mode, the amax and a calibrator.
//
// PQ keeps the mode in four booleans (_disabled, _if_quant, _if_calib, _if_clip) whose
// combinations overlap; here it is one value. A learned range (PQ's clip stage, or LSQ's step
// size) is not a mode: it is desc.learn_amax or desc.learn_step_size, in effect whenever the
// quantizer quantizes.
//
// A Module registers `amax` as the buffer "<layer>._input_quantizer._amax" (or
// "._weight_quantizer._amax"), QDQBERT's state_dict keys — as a parameter instead when
// the range is learned, so that the optimizer updates it. amax is only ever written in place, so the
// registered handle and this member stay the same tensor.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "autograd/tensor.h"
#include "quant/calibrators.h"
#include "quant/quant_descriptor.h"

namespace qdq {

enum class QuantMode {
    Disabled,     // quantize(x) returns x
    Calibrating,  // collects x's statistics into the calibrator and returns x unchanged
    Quantizing,   // fake-quantizes x with amax (PQ's default state)
};

const char* quant_mode_name(QuantMode mode);

// How load_calib_amax reads a histogram (PQ's compute_amax(method, start_bin=, stride=,
// percentile=)), plus Max: the exact max |x| the histogram pass also keeps, so that one pass
// over the calibration data serves all four methods. The method is a required argument: HF's
// quant_trainer silently ran percentile when asked for mse, and a choice without a default
// cannot do that.
enum class AmaxMethod { Max, Percentile, Mse, Entropy };

inline constexpr std::pair<const char*, AmaxMethod> kAmaxMethodNames[] = {
    {"max", AmaxMethod::Max}, {"percentile", AmaxMethod::Percentile}, {"mse", AmaxMethod::Mse}, {"entropy", AmaxMethod::Entropy}};
const char* amax_method_name(AmaxMethod method);

// A calibration method, the one name for it everywhere: a config's quantization.calibrator and
// quantization.percentile, calibrate's rows and their checkpoint directories
// ("percentile-99.99"). (QuantDescriptor's calib_method is another thing: which calibrator
// collects, max or histogram.)
struct CalibrationMethod {
    AmaxMethod method = AmaxMethod::Percentile;
    double percentile = 99.99;  // percentile only; PQ's default (ORT's is 99.999)
};
// "max", "percentile-99.99", "mse", "entropy".
std::string calibration_method_name(const CalibrationMethod& method);

// The search of mse and entropy over a histogram's bins (PQ's compute_amax start_bin=, stride=).
struct HistogramSearch {
    int64_t start_bin = 128;
    int64_t stride = 1;
};

// What a quantizer quantizes: data flowing through (an input or activation), or a module's own
// weight, which it holds a handle on so that its ranges can be taken from the weight itself.
enum class QuantRole { Input, Weight };

struct TensorQuantizer {
    QuantDescriptor desc;
    QuantMode mode = QuantMode::Quantizing;
    QuantRole role = QuantRole::Input;
    Tensor weight;  // the weight quantized (role Weight), else undefined
    // Shape [] per tensor (PQ's 0-d buffer); per channel the shape given to the constructor,
    // e.g. {out, 1} as PQ's keepdims amax of a Linear weight [out, in]. desc.amax's value(s),
    // else NaN: not calibrated, which quantize() refuses to use.
    Tensor amax;
    std::variant<MaxCalibrator, HistogramCalibrator> calibrator;
    // With keep_output, quantize() keeps its latest fake-quantized result in `kept`: the export's
    // fidelity report compares it with what ONNX Runtime computes there (stages/onnx_fidelity.h).
    bool keep_output = false;
    Tensor kept;

    // Validates desc. Per channel, amax_shape is required (its element count is the channel count).
    explicit TensorQuantizer(const QuantDescriptor& desc, const Shape& amax_shape = {});
    // A weight's quantizer: role Weight, bound to `weight`.
    static TensorQuantizer for_weight(const QuantDescriptor& desc, const Tensor& weight, const Shape& amax_shape);

    Tensor quantize(const Tensor& x);

    // Writes the calibrator's amax into `amax` (PQ's load_calib_amax). The first form is for a
    // max calibrator, the second for a histogram; the other pairing throws. The mode is left as
    // it is: switching to Quantizing is the caller's step, as in PQ.
    void load_calib_amax();
    void load_calib_amax(const CalibrationMethod& method, const HistogramSearch& search = {});
};

// x through the quantizer where a layer has one there (not null), else x.
inline Tensor quantize(TensorQuantizer* quantizer, const Tensor& x) { return quantizer ? quantizer->quantize(x) : x; }

}  // namespace qdq
