// A task's evaluation spread over the ranks of a data-parallel run (parallel/communicator.h):
// each rank runs every N-th batch of eval_inputs(), the outputs are gathered on every rank and
// scored there by the task's own score(). The batches, the model and the scoring are those of
// one process, so the metrics are too, bit for bit: counts and sums over the whole set, and for
// SQuAD every window's logits before the official metric, never averages of ranks' averages.
// Masked-LM, which has no eval_inputs(), splits its batches inside evaluate() (mlm_task.cpp) and
// sums each batch's loss and counts across ranks, in batch order: one process's numbers too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainers/task.h"

namespace qdq {

Metrics evaluate_on_ranks(Task& task, int64_t batch_size);

// Outputs as bytes and back: names, shapes and float32 data (what allgather_bytes carries).
std::string outputs_to_bytes(const std::vector<NamedOutputs>& outputs);
std::vector<NamedOutputs> outputs_from_bytes(const std::string& bytes);

}  // namespace qdq
