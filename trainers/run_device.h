// Where a run's model lives. As Hugging Face's Trainer: on the GPU when one is present, unless
// training.use_cpu. The batches are made on the CPU and go to the device inside the model
// (ids and labels stay on the CPU: the embedding and cross-entropy ops copy what their kernels
// need); outputs come back for scoring; checkpoints are written from host copies, so a run
// saved on one device resumes on the other.
//
// The config is checked against what the device backend has kernels for before anything runs,
// so that a run never stops half-way at an op without one.
#pragma once

#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "nn/module.h"
#include "trainers/run_config.h"

namespace qdq {

// Device::CUDA when a device is present and training.use_cpu is false, else Device::CPU.
Device run_device(const TrainingSettings& training);

// What `config` asks for that this GPU cannot run, each naming its config key and what is
// missing; empty when the run can go on it. Every op of training, evaluation, calibration and
// QAT has a kernel (bf16 products, PACT, LSQ and distillation included); what a device can lack
// is cuBLAS's bf16 products and TF32 (compute capability below 8.0). Needs a device.
std::vector<std::string> device_gaps(const RunConfig& config);

// On the GPU, throws naming every gap and the way out (training.use_cpu); on the CPU, for
// training.tf32, which HF's Trainer refuses without a GPU too, and, unless training.use_cpu,
// when a GPU is there and cannot be used (cuda::unusable_gpu: an old driver), which would
// otherwise send the run to the CPU without a word.
void check_device_support(const RunConfig& config);

// Under mpirun on the GPU, takes the GPU of this rank's local rank (mod the count). Before the
// task is built: its model, a distillation teacher and their batches are allocated on the
// selected GPU, which cannot change once they are (cuda::select_device).
void select_run_device(const RunConfig& config);

// Moves `model` to run_device(config.training), first saying where on stderr (once per process).
void place_on_run_device(const nn::Module& model, const RunConfig& config);

}  // namespace qdq
