// How a run continues from its output directory: whether a checkpoint's config describes this
// run, which checkpoint to resume from when the newest one cannot be read, and whether the run
// already finished (trainers/trainer.h).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainers/checkpoint.h"

namespace qdq {

// Throws, naming `checkpoint` and the first key that differs, unless the config a checkpoint
// saved (`saved`) and this run's resolved config (`current`) describe the same run: they may
// differ only in where and how often it reports and saves, the device, and where the data files
// sit; and when it evaluates, on what and by which metric, unless the evaluations steer the run
// (reduce_lr_on_plateau, early stopping). Throws too when `saved` is a save_only_model run's: its
// checkpoints lack the optimizer's moments, without which the run would not continue as it would
// have.
void check_resumable(const RunConfig& saved, const RunConfig& current, const std::string& checkpoint);

struct ReadableCheckpoint {
    std::string path;
    Checkpoint checkpoint;
};

// The newest checkpoint of `dir` that reads whole. A newer one that does not (cut short by a full
// disk, say) is reported on stderr and, by `set_aside` (rank 0 of a run), renamed to
// <name>.unreadable: kept for a look, out of the run's way. None when there is no checkpoint;
// throws when there are some and none reads.
std::optional<ReadableCheckpoint> newest_readable_checkpoint(const std::string& dir, bool set_aside);

// Clears `dir` for a run that starts over in it (train's --no-resume): its checkpoints, and the
// model.h5 and eval_results.json of a run finished there, which would otherwise read as the new
// run's once that is interrupted (finished_run_metrics), to itself and to a sweep.
void start_over(const std::string& dir);

// The final metrics of a run that already finished in `dir` (model.h5, eval_results.json and a
// config.json of the same run as `resolved`), so that running it again changes nothing. Throws as
// check_resumable does when the finished run is another config's: starting over would overwrite
// its results, and a finished run may keep no checkpoint to refuse a resume by.
std::optional<nlohmann::json> finished_run_metrics(const std::string& dir, const RunConfig& resolved);

}  // namespace qdq
