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

// Data parallel (parallel/communicator.h): each rank collects over its share of the calibration
// batches, then every rank holds what one process collecting all of them would have:
//   drop_collected_counts(model) after the first (global) batch has been collected on every
//   rank, and before a rank other than 0 collects its own: counts and maxima are dropped, the
//   bin width that batch set (and the bins it made) stay, so that every rank bins alike;
//   merge_collected(model) at the end: maxima by max (per channel), histogram counts summed bin
//   by bin, grown to the most bins any rank has. Histograms whose widths differ (an activation
//   all zeros in the first batch) are an error naming the quantizer. Nothing happens in one process.
// One process's histogram can differ only where a value falls exactly on the closed last bin's
// edge as it stood when that value came (a bin to the left there, in the other here).
void drop_collected_counts(const nn::Module& model);
void merge_collected(const nn::Module& model);

// Every activation quantizer's amax by `method`, from what it collected since
// begin_calibration; then every quantizer quantizes. The statistics are kept, so another method
// can follow. An activation quantizer that saw no nonzero value is an error naming it.
void load_activation_ranges(const nn::Module& model, const CalibrationMethod& method);

// Throws naming the first quantizer whose amax is still NaN: a model that must be calibrated,
// or loaded from a calibrated checkpoint, before it quantizes anything.
void check_calibrated(const nn::Module& model, const std::string& hint);

}  // namespace qdq
