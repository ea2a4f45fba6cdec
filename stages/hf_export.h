// `qdqtrain save-pretrained`: a float task model as a Hugging Face directory, the form every
// BERT loader reads (transformers' from_pretrained, this project's model.init):
//   config.json            the BertConfig, with "architectures" naming the head
//                          (BertForMaskedLM, BertForSequenceClassification, BertForQuestionAnswering)
//   model.safetensors      float32 weights under Hugging Face's names; the masked-LM decoder is
//                          tied to the word embeddings, so it is not stored, as transformers
//                          itself leaves tied weights out
//   vocab.txt              the run's data.vocab (a byte-level BPE's: vocab.json and merges.txt)
//   tokenizer_config.json  BertTokenizer with the run's do_lower_case (a byte-level BPE's:
//                          RobertaTokenizer)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainers/run_config.h"

namespace qdq {

// Builds the task's model from `config` (no data is read), loads `checkpoint` (a checkpoint,
// model.h5, .safetensors or a Hugging Face directory) and writes the directory `out_dir`.
// A config with a "quantization" section is refused: Hugging Face's BERT has no quantizers,
// and `qdqtrain export` writes quantized models. Returns {"directory", "architecture", "files"}.
nlohmann::json save_task_pretrained(const RunConfig& config, const std::string& checkpoint,
                                    const std::string& out_dir);

}  // namespace qdq
