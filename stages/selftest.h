// qdqtrain selftest: the CUDA backend checked on the GPU it will train on, for a user who has one
// (no GPU is attached where this project is developed). It prints the device, its compute
// capability and the driver and runtime versions, then runs each device kernel
// (cuda/backend.h) on odd shapes and compares it with the CPU op that training runs today:
// within a tolerance for arithmetic whose order differs, exactly for masks, codes, gathers and
// counts; then three training steps of a small BERT classifier on both, whose losses must agree.
// When compute-sanitizer is installed it runs the checks again under it.
// Exit codes: 0 all agree, 1 a mismatch or a sanitizer report, kSelftestNoDevice without a
// device (or a build without CUDA), which it says.
#pragma once

#include <ostream>
#include <string>

namespace qdq {

constexpr int kSelftestNoDevice = 77;  // the "skipped" code of automake and ctest

// self_path: this binary, run again under compute-sanitizer when that is installed; empty skips
// that second run.
int run_selftest(std::ostream& out, const std::string& self_path);

}  // namespace qdq
