// Named tensors in an HDF5 file, through the HDF5 C library. Layout:
//   - one dataset per tensor at the file root, named by the tensor's key verbatim, dots and
//     all ("bert.encoder.layer.0.attention.self.query.weight"), not split into groups, so a
//     key needs no translation either way (h5py: f["bert.embeddings.word_embeddings.weight"]);
//   - float32 tensors as IEEE F32LE, int32 tensors as STD I32LE, with the tensor's row-major
//     shape (a rank-0 tensor is a scalar dataspace);
//   - the model config as a variable-length UTF-8 string attribute "config" on the root group;
//   - link creation order tracked, so a load returns the tensors in the order they were saved
//     (files from other writers, without that order, load sorted by name).
// Every HDF5 failure becomes a std::runtime_error naming the file (and the key, if any); HDF5's
// own error-stack printing is silenced while these functions run.
#pragma once

#include <string>

#include "autograd/named_tensors.h"

namespace qdq {

struct Hdf5Weights {
    NamedTensors tensors;
    std::string config_json;
};

// How tensors are stored. Compressed: HDF5's shuffle and deflate (level 1) filters, lossless,
// about 15% smaller on BERT's weights and slower to write: for files written once and kept (a
// run's model.h5), not for checkpoints written every few hundred steps.
enum class Hdf5Storage { Plain, Compressed };

// Keys must be non-empty, unique, free of '/' (HDF5's path separator) and not ".".
void save_hdf5_weights(const std::string& path, const NamedTensors& tensors,
                       const std::string& config_json, Hdf5Storage storage = Hdf5Storage::Plain);

Hdf5Weights load_hdf5_weights(const std::string& path);

// The "config" attribute alone, without reading any tensor.
std::string load_hdf5_config(const std::string& path);

// One tensor by key, without reading the others.
Tensor load_hdf5_tensor(const std::string& path, const std::string& key);

}  // namespace qdq
