#include "qdqbert/calibration.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "qdqbert/qdq_placement.h"

namespace qdq {

std::vector<CalibrationMethod> standard_calibration_methods() {
    return {{AmaxMethod::Max},           {AmaxMethod::Percentile, 99.9}, {AmaxMethod::Percentile, 99.99},
            {AmaxMethod::Percentile, 99.999}, {AmaxMethod::Mse},        {AmaxMethod::Entropy}};
}

void begin_calibration(const nn::Module& model) {
    calibrate_weights(model);
    for (auto& [name, q] : model.named_quantizers()) {
        // The activations are collected from the float model, as PQ's recipe does (quantization
        // off everywhere while calibrating): ranges do not depend on the order layers are visited.
        if (q->role == QuantRole::Weight) {
            q->mode = QuantMode::Disabled;
            continue;
        }
        std::visit([](auto& calib) { reset(calib); }, q->calibrator);
        q->mode = QuantMode::Calibrating;
    }
}

void load_activation_ranges(const nn::Module& model, const CalibrationMethod& method) {
    std::vector<std::pair<std::string, TensorQuantizer*>> activations;
    for (auto& [name, q] : model.named_quantizers()) {
        if (q->role == QuantRole::Input) activations.emplace_back(name, q);
        q->mode = QuantMode::Quantizing;
    }
    // MSE and entropy search each histogram in O(bins²): one quantizer per thread. An exception
    // must not leave an OpenMP region, so each one's error is kept and the first is thrown.
    std::vector<std::string> errors(activations.size());
#pragma omp parallel for schedule(dynamic)
    for (size_t i = 0; i < activations.size(); ++i) {
        TensorQuantizer& q = *activations[i].second;
        try {
            if (std::holds_alternative<MaxCalibrator>(q.calibrator)) {
                if (method.method != AmaxMethod::Max)
                    throw std::runtime_error(std::string("collected max only; '") + amax_method_name(method.method) +
                                             "' needs calib_method histogram");
                q.load_calib_amax();
            } else {
                q.load_calib_amax(method);
            }
        } catch (const std::exception& e) {
            errors[i] = activations[i].first + ": " + e.what();
        }
    }
    for (const std::string& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
}

void check_calibrated(const nn::Module& model, const std::string& hint) {
    for (auto& [name, q] : model.named_quantizers()) {
        const float* a = q->amax.f32();
        for (int64_t i = 0; i < q->amax.numel(); ++i)
            if (std::isnan(a[i])) throw std::runtime_error(name + " has no range (amax is NaN): " + hint);
    }
}

}  // namespace qdq
