#include "quant/tensor_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "json/json_fields.h"
#include "quant/fake_quant.h"

namespace qdq {

namespace {

void write_amax(const Tensor& amax, const std::vector<float>& values) {
    check((int64_t)values.size() == amax.numel(),
          "load_calib_amax: the calibrator gave " + std::to_string(values.size()) +
              " values for an amax of shape " + shape_str(amax.shape()));
    amax.copy_from(from_vector(amax.shape(), values));  // amax lives where the model does
}

}  // namespace

const char* quant_mode_name(QuantMode mode) {
    switch (mode) {
        case QuantMode::Disabled: return "disabled";
        case QuantMode::Calibrating: return "calibrating";
        case QuantMode::Quantizing: return "quantizing";
    }
    return "?";
}

TensorQuantizer::TensorQuantizer(const QuantDescriptor& d, const Shape& amax_shape) : desc(d) {
    validate(desc);
    if (desc.axis)
        check(!amax_shape.empty() && shape_numel(amax_shape) >= 1,
              "TensorQuantizer: a per-channel quantizer needs the amax shape (e.g. {out, 1})");
    else
        check(shape_numel(amax_shape) == 1, "TensorQuantizer: a per-tensor amax has one value, got shape " +
                                                shape_str(amax_shape));
    amax = full(amax_shape, NAN);
    if (desc.amax) {
        const std::vector<float>& v = *desc.amax;
        check(v.size() == 1 || (int64_t)v.size() == amax.numel(),
              "TensorQuantizer: desc.amax has " + std::to_string(v.size()) +
                  " values for an amax of shape " + shape_str(amax_shape));
        float* pa = amax.f32();
        for (int64_t i = 0; i < amax.numel(); ++i) pa[i] = v[v.size() == 1 ? 0 : (size_t)i];
    }
    if (desc.learn_amax || desc.learn_step_size) amax.set_requires_grad(true);
    if (desc.calib_method == CalibMethod::Max) calibrator = MaxCalibrator{desc.axis, {}};
    else calibrator = HistogramCalibrator{desc.num_bits, desc.unsigned_};
}

Tensor TensorQuantizer::quantize(const Tensor& x) {
    switch (mode) {
        case QuantMode::Disabled: return x;
        case QuantMode::Calibrating:
            std::visit([&](auto& calib) { collect(calib, x); }, calibrator);
            return x;
        case QuantMode::Quantizing: {
            Tensor y = fake_quant(x, amax, quant_params(desc));
            if (keep_output) kept = y;
            return y;
        }
    }
    return x;
}

void TensorQuantizer::load_calib_amax() {
    const MaxCalibrator* calib = std::get_if<MaxCalibrator>(&calibrator);
    check(calib != nullptr,
          "load_calib_amax: a histogram calibrator needs a method (max, percentile, mse or entropy)");
    write_amax(amax, compute_amax(*calib));
}

void TensorQuantizer::load_calib_amax(const CalibrationMethod& m, const HistogramSearch& o) {
    const HistogramCalibrator* calib = std::get_if<HistogramCalibrator>(&calibrator);
    check(calib != nullptr, "load_calib_amax: a max calibrator takes no histogram method");
    float value = 0.0f;
    switch (m.method) {
        case AmaxMethod::Max:
            check(calib->max > 0.0f, "load_calib_amax: the histogram holds no nonzero value (collect first)");
            value = calib->max;
            break;
        case AmaxMethod::Percentile: value = percentile_amax(*calib, m.percentile); break;
        case AmaxMethod::Mse: value = mse_amax(*calib, o.start_bin, o.stride); break;
        case AmaxMethod::Entropy: value = entropy_amax(*calib, o.start_bin, o.stride); break;
    }
    write_amax(amax, {value});
}

TensorQuantizer TensorQuantizer::for_weight(const QuantDescriptor& d, const Tensor& w, const Shape& amax_shape) {
    TensorQuantizer q(d, amax_shape);
    q.role = QuantRole::Weight;
    q.weight = w;
    return q;
}

const char* amax_method_name(AmaxMethod method) { return name_of_choice(method, kAmaxMethodNames); }

std::string calibration_method_name(const CalibrationMethod& m) {
    if (m.method != AmaxMethod::Percentile) return amax_method_name(m.method);
    char buf[64];
    std::snprintf(buf, sizeof buf, "percentile-%g", m.percentile);
    return buf;
}

}  // namespace qdq
