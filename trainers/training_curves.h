// Training curves of a run directory, drawn from its metrics.jsonl (trainers/run_log.h): the
// training loss against the step, with the evaluation loss where the run evaluated, and the
// evaluation metrics (eval_accuracy, eval_f1, ...) on a second plot.
#pragma once

#include <string>

namespace qdq {

// Writes <prefix>_loss.svg, and <prefix>_eval.svg when the log holds evaluation metrics other
// than the loss. Throws naming the file when the log is missing or malformed.
void write_training_curves(const std::string& run_dir, const std::string& prefix);

}  // namespace qdq
