// Small data files in the official layouts the paper configs name: SQuAD v1.1's train-v1.1.json
// and dev-v1.1.json, GLUE's MNLI/train.tsv and dev_matched.tsv, filled with a few real examples
// of the shared data (its SQuAD dev file and MNLI dev_matched pairs).
#pragma once

#include <filesystem>

namespace qdq::testing {

// dir/train-v1.1.json (one answer a question, as the training file has) and dir/dev-v1.1.json
// (every annotator's answer), from different articles; {"data": [...], "version": "1.1"}. Each
// context is longer than a 384-token window, so windows run full and doc_stride splits them.
void write_official_squad(const std::filesystem::path& dir);

// The same questions as Hugging Face's datasets export them (`to_json`): one flat JSON object a
// line, answers as {"text": [...], "answer_start": [...]}. Not a layout the SQuAD reader takes.
void write_squad_as_json_lines(const std::filesystem::path& file);

// dir/train.tsv with GLUE's MNLI training header (index, promptID, pairID, genre, the parses,
// sentence1, sentence2, label1, gold_label) and dir/dev_matched.tsv with its dev header
// (label1 ... label5, gold_label).
void write_official_mnli(const std::filesystem::path& dir);

}  // namespace qdq::testing
