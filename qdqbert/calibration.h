// Post-training calibration of a model's quantizers, every method from one pass over the data:
// weight ranges come from the weights themselves (per channel max, as PQ's recipe calibrates
// weights with max whatever the activation method), activation ranges from what each activation
// quantizer collected while the calibration batches ran through the model.
//
//   begin_calibration(model);                       weights ranged, activations collecting (float)
//   for each batch: forward in eval mode
//   load_activation_ranges(model, method);          ranges by one method, everything quantizing
//   ... evaluate, save ..., load_activation_ranges(model, another method) ...
//
// A histogram keeps the exact max beside its bins, so "max" needs no pass of its own.
#pragma once

#include <string>
#include <vector>

#include "nn/module.h"
#include "quant/tensor_quantizer.h"

namespace qdq {

// The rows of the PTQ table: max, percentile 99.9 / 99.99 / 99.999, mse, entropy.
std::vector<CalibrationMethod> standard_calibration_methods();

// Weight quantizers get their ranges from the current weights (and pass weights through
// unquantized until the ranges are loaded); activation quantizers forget what they collected and
// collect.
void begin_calibration(const nn::Module& model);

// Every activation quantizer's amax by `method`, from what it collected since
// begin_calibration; then every quantizer quantizes. The statistics are kept, so another method
// can follow. An activation quantizer that saw no nonzero value is an error naming it.
void load_activation_ranges(const nn::Module& model, const CalibrationMethod& method);

// Throws naming the first quantizer whose amax is still NaN: a model that must be calibrated,
// or loaded from a calibrated checkpoint, before it quantizes anything.
void check_calibrated(const nn::Module& model, const std::string& hint);

}  // namespace qdq
