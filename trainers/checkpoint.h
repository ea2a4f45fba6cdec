// Training checkpoints in HDF5 (io/hdf5_weights.h): the model's state_dict under "model.<key>",
// the optimizer's state under "optimizer.<key>", and as the root's JSON attribute the run
// config and the trainer's scalar state (step, RNG states, data-loader position, best metric).
// A checkpoint is written to "<path>.tmp" and renamed over <path>: a crash mid-write leaves the
// previous checkpoint as it was.
//
// A checkpoint may hold only part of the model and name the file that holds the rest ("weights"
// in the metadata): each calibration method's ranges over the float weights that every method
// shares, which would otherwise be stored once per method (stages/calibrate.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/loader.h"
#include "io/hdf5_weights.h"
#include "autograd/named_tensors.h"
#include "nn/module.h"
#include "nn/state_dict.h"
#include "optim/plateau.h"
#include "trainers/run_config.h"

namespace qdq {

// A data-parallel rank's own random streams: its dropout masks and data randomness differ from
// the other ranks' (parallel/communicator.h).
struct RankRngs {
    std::array<uint64_t, 4> dropout_rng{};
    std::array<uint64_t, 4> data_rng{};
};

struct TrainerState {
    int64_t step = 0;                       // optimizer updates done
    LoaderPosition loader;                  // where the next training batch starts
    std::array<uint64_t, 4> dropout_rng{};  // the model's dropout stream
    std::array<uint64_t, 4> data_rng{};     // masking (MLM) and other data randomness
    std::optional<double> best_metric;
    std::string best_checkpoint;            // file name within the output directory
    // Evaluations in a row that have not beaten the best before them by early_stopping_threshold
    // (HF's EarlyStoppingCallback's early_stopping_patience_counter).
    int64_t evaluations_without_improvement = 0;
    // The training loss since the last log line (summed, and the steps summed), so the first
    // line after a resume averages the same steps as it would have without the interruption.
    double log_loss_sum = 0;
    int64_t log_steps = 0;
    double seconds = 0;  // training time so far, over every run of it
    // Training tokens read so far, padding excluded (HF's num_input_tokens_seen counts the
    // padded batch; packed masked-LM sequences have no padding, so there the two agree).
    // -1: unknown, for a checkpoint written before it was counted.
    int64_t input_tokens_seen = 0;
    // A data-parallel run's every rank, in rank order (rank 0's are also the two above); empty
    // for one process. Its size is the number of ranks the run resumes with.
    std::vector<RankRngs> ranks{};
    std::optional<PlateauState> plateau{};  // under reduce_lr_on_plateau (trainers/run_schedule.h)
};

struct Checkpoint {
    NamedTensors model;
    NamedTensors optimizer;
    TrainerState state;
    RunConfig config;  // the run config that wrote it, as resolved then
    // The file holding the rest of the model's state, relative to this file's directory; empty
    // when this file holds all of it. That file must hold all of its own.
    std::string weights{};
};

// Plain storage for checkpoints written every save_steps; Compressed for files that are kept
// (a calibration's float weights: io/hdf5_weights.h).
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint, Hdf5Storage storage = Hdf5Storage::Plain);
// The whole model state: with "weights", that file's model tensors with this file's on top, and
// `weights` empty in the result. An error names both files when that one cannot be read.
Checkpoint load_checkpoint(const std::string& path);

// The weights of any model file: a checkpoint's model part, or a pretrained file or directory as
// nn/pretrained.h reads them (HF directory, .safetensors, .h5). Missing and unexpected keys are
// reported on stderr, as HF's from_pretrained warns; shape mismatches are errors.
void load_model_weights(nn::Module& model, const std::string& path);
// load_model_weights without the report on stderr: the keys the file lacked or held beyond the model.
nn::LoadReport read_model_weights(nn::Module& model, const std::string& path);
// The run config a checkpoint's metadata holds; none for any other file.
std::optional<RunConfig> checkpoint_run_config(const std::string& path);
// The file that holds the rest of the checkpoint's model ("weights", resolved against the
// checkpoint's directory); empty when the checkpoint holds all of it.
std::string checkpoint_weights_file(const std::string& path);

// A model's state in two: its quantizers' (every entry under an attached quantizer's name, e.g.
// "<quantizer>._amax") and the rest, the float weights.
struct SplitState {
    NamedTensors weights;
    NamedTensors quantizers;
};
SplitState split_quantizer_state(const nn::Module& model);

// checkpoint-<step>.h5 files in `dir`, oldest first.
std::vector<std::string> list_checkpoints(const std::string& dir);
std::string checkpoint_name(int64_t step);
// Removes the oldest checkpoints beyond `keep`, never one named in `protect`: protected files
// count toward `keep` but stay when they alone exceed it (Hugging Face's Trainer keeps the best
// and the newest under save_total_limit 1).
void prune_checkpoints(const std::string& dir, int keep, const std::vector<std::string>& protect);

}  // namespace qdq
