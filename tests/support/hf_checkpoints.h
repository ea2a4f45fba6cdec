// Hugging Face model directories as users download them: the public checkpoints' config.json and
// tokenizer files, with random weights of the exact shapes (BERT-base, BERT-large, RoBERTa-base),
// for tests that must run a recipe at its real size without the real weights.
#pragma once

#include <filesystem>

namespace qdq::testing {

enum class HfCheckpoint {
    BertBaseUncased,      // bert-base-uncased: 12 × 768, WordPiece vocab.txt
    BertLargeUncasedWwm,  // bert-large-uncased-whole-word-masking: 24 × 1024
    RobertaBase,          // roberta-base: 12 × 768, 514 positions, byte-level BPE (vocab.json + merges.txt)
    BertTiny,             // 2 × 128 under BERT-base's vocabulary: for tests that need a model, not its size
};

// Writes config.json, model.safetensors (float32, seeded normal init as HF's _init_weights) and the
// tokenizer files into `dir`. BERT's vocab.txt is the shared data's bert-base-uncased vocabulary
// (the public checkpoints' own); RoBERTa's vocab.json and merges.txt are the small BPE of
// tests/fixtures/bpe, whose ids all fall within roberta-base's 50,265 rows.
void write_hf_checkpoint(const std::filesystem::path& dir, HfCheckpoint which);

// A BertTiny directory whose config.json says hidden_size 256 while its weights are 128 wide.
void write_mismatched_hf_checkpoint(const std::filesystem::path& dir);

}  // namespace qdq::testing
