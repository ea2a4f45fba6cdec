// Model files as users have them: a Hugging Face directory (config.json + model.safetensors),
// a bare .safetensors file, or one HDF5 file holding the weights with the config as an
// attribute. RoBERTa checkpoints are transplanted into BERT on the way in (nn/roberta.h).
#pragma once

#include <string>

#include "nn/bert_config.h"
#include "nn/state_dict.h"

namespace qdq::nn {

// The config of a directory (its config.json), a config.json itself, or an .h5 file.
BertConfig load_pretrained_config(const std::string& path);

// Loads the weights of a directory (model.safetensors), a .safetensors or an .h5 file.
LoadReport load_pretrained_weights(Module& model, const std::string& path);

// Writes config.json and model.safetensors (float32) into `dir`, creating it. A non-empty
// `architecture` ("BertForMaskedLM") is written as config.json's "architectures", which
// transformers' AutoModel reads to pick the head.
void save_pretrained(const Module& model, const BertConfig& config, const std::string& dir,
                     const std::string& architecture = "");
// A model file (a run's model.h5): the state_dict and the model config, compressed losslessly.
void save_hdf5(const Module& model, const BertConfig& config, const std::string& path);

}  // namespace qdq::nn
