#include "qdqbert/calibration.h"

#include <cmath>
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "parallel/communicator.h"
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

void drop_collected_counts(const nn::Module& model) {
    for (auto& [name, q] : model.named_quantizers())
        if (auto* h = std::get_if<HistogramCalibrator>(&q->calibrator)) {
            std::fill(h->counts.begin(), h->counts.end(), 0);
            h->max = 0.0f;
        } else if (auto* m = std::get_if<MaxCalibrator>(&q->calibrator)) {
            std::fill(m->amax.begin(), m->amax.end(), 0.0f);
        }
}

namespace {

// The largest bin count and the width over every rank; throws when widths differ.
void merge_histogram(const std::string& name, HistogramCalibrator& h) {
    float widths[2] = {h.width, -h.width};  // max of both: the largest and (negated) smallest
    allreduce_max(widths, 2);
    if (widths[0] != -widths[1])
        throw std::runtime_error(name + ": the ranks' histograms have different bin widths (" +
                                 std::to_string(-widths[1]) + " and " + std::to_string(widths[0]) +
                                 "): calibrate in one process");
    int64_t bins = (int64_t)h.counts.size();
    allreduce_max(&bins, 1);
    h.counts.resize((size_t)bins, 0);
    allreduce_sum(h.counts.data(), (int64_t)h.counts.size());
    allreduce_max(&h.max, 1);
}

}  // namespace

void merge_collected(const nn::Module& model) {
    if (world().size == 1) return;
    for (auto& [name, q] : model.named_quantizers()) {
        if (q->role != QuantRole::Input) continue;
        if (auto* h = std::get_if<HistogramCalibrator>(&q->calibrator)) {
            merge_histogram(name, *h);
        } else if (auto* m = std::get_if<MaxCalibrator>(&q->calibrator)) {
            allreduce_max(m->amax.data(), (int64_t)m->amax.size());
        }
    }
}

void check_calibrated(const nn::Module& model, const std::string& hint) {
    for (auto& [name, q] : model.named_quantizers()) {
        for (float a : q->amax.to_vector())
            if (std::isnan(a)) throw std::runtime_error(name + " has no range (amax is NaN): " + hint);
    }
}

}  // namespace qdq
