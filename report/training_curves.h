// Training curves of a run directory, drawn from its metrics.jsonl (trainers/run_log.h): the
// training loss against the step, with the evaluation losses where the run evaluated (eval_loss,
// and each named set's eval_<name>_loss), and the other evaluation metrics (eval_accuracy,
// eval_f1, eval_<name>_mlm_accuracy, ...; perplexities left out, being exp of a plotted loss)
// on a second plot. by_tokens puts num_input_tokens_seen on the x axis instead of the step, as
// pretraining curves are drawn; records without it are then left out.
#pragma once

#include <string>

namespace qdq {

// Writes <prefix>_loss.svg, and <prefix>_eval.svg when the log holds evaluation metrics other
// than the loss. Throws naming the file when the log is missing or malformed.
void write_training_curves(const std::string& run_dir, const std::string& prefix, bool by_tokens = false);

}  // namespace qdq
