// Text classification files (NLI pairs, SST-2, RTE, WNLI, IMDB as CSV or JSONL) into TextExample.
//
// The file kind follows the name: *.jsonl[.gz] is one JSON object per line (MultiNLI/SNLI
// releases, the IMDB and Wikipedia files here), where the column names below are keys; anything
// else is delimited (data/delimited_file.h: *.csv[.gz] RFC 4180 CSV, else unquoted TSV) with a
// header row, unless `format` says otherwise.
//
// Labels: a label cell is matched against label_names without regard to case (SICK writes
// ENTAILMENT) and becomes its index there. A number k (digits in a cell, or a JSON integer) is
// taken as that index, as in Hugging Face's GLUE/SNLI exports and GLUE's SST-2 ("0", "1").
// A gold label "-" (MultiNLI/SNLI: the annotators did not agree; GLUE drops these rows) or the
// number -1 (Hugging Face's SNLI spelling of the same thing) skips the row and counts it in
// stats.skipped_no_gold. Anything else is an error "<file>:<line>: label ...".
//
// Label orders, as GLUE and Hugging Face number them, and what the shared data files hold:
//   3-way NLI: entailment 0, neutral 1, contradiction 2. Names in every file here: MNLI and SNLI
//     (lower case, "-" rows in the MultiNLI/SNLI CSVs), SICK (upper case), TextFooler.
//   RTE (2-way): entailment 0, not_entailment 1. WNLI (2-way) the other way round:
//     not_entailment 0, entailment 1 (GLUE's WNLI TSVs, Hugging Face's glue/wnli). Names in the
//     CSV copies here.
//   SST-2 and IMDB: negative 0, positive 1. GLUE's SST-2 TSVs and the IMDB JSONL hold the numbers
//     0/1; Kaggle's IMDB CSV holds the names.
// A model whose config.json names these labels in another order gets them in its own
// (trainers/classification_labels.h); the reader's indices are always the orders above.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/delimited_file.h"
#include "data/examples.h"

namespace qdq {

// Column names (JSON keys). A header-less delimited file names its columns "0", "1", ...
struct ClassificationColumns {
    std::string id = "pairID";  // used where the file has it, else the id is "<file name>:<line>"
    std::string text_a = "sentence1";
    std::string text_b = "sentence2";  // empty: single-text task, text_b stays empty
    // The first of these that the file has is the label: GLUE's MNLI TSVs have label1..label5
    // (each annotator) and gold_label; GLUE's RTE and the CSV copies have label.
    std::vector<std::string> label = {"gold_label", "label"};
};

// Keeps the rows whose `column` equals `value` (SICK's SemEval_set: TRAIN, TRIAL, TEST); the
// others are counted in stats.filtered_out.
struct RowFilter {
    std::string column, value;
};

struct ClassificationOptions {
    ClassificationColumns columns;
    std::vector<std::string> label_names = {"entailment", "neutral", "contradiction"};
    bool labelled = true;                   // false: no label column (GLUE test sets), label -1
    std::optional<DelimitedFormat> format;  // default: format_for_path (ignored for JSONL)
    std::optional<RowFilter> keep_only;
};

struct ClassificationStats {
    int64_t records = 0;                // data rows (lines) read, before skipping or filtering
    int64_t skipped_no_gold = 0;        // gold label "-" or -1
    int64_t filtered_out = 0;           // rejected by keep_only
    std::vector<int64_t> label_counts;  // per label_names entry, over the examples returned
};

struct ClassificationData {
    std::vector<TextExample> examples;  // in file order
    ClassificationStats stats;
};

// Throws std::runtime_error naming the file (and line) for an unreadable file, a missing column,
// a bad label, a wrong field count, invalid UTF-8 or a line that is not a JSON object.
ClassificationData read_classification(const std::string& path, const ClassificationOptions& options = {});

// GLUE MNLI/SNLI TSVs (also GLUE's MNLI with its parse columns), the MultiNLI/SNLI CSV and
// JSONL releases: the defaults above.
ClassificationOptions nli_options();
// `label<TAB>premise<TAB>hypothesis` without a header (TextFooler's MNLI samples).
ClassificationOptions headerless_nli_options();
// SICK.txt: pair_ID, sentence_A, sentence_B, entailment_label (upper case), tab-separated.
ClassificationOptions sick_options();
// GLUE RTE and WNLI: GLUE's column names with each one's 2-way labels. The CSV copies here name
// their columns premise, hypothesis, label: see premise_hypothesis_columns().
ClassificationOptions rte_options();
ClassificationOptions wnli_options();
ClassificationColumns premise_hypothesis_columns();
// GLUE SST-2: sentence, label. Its test.tsv has index and sentence only: set labelled = false
// and columns.id = "index".
ClassificationOptions sst2_options();

// The presets by data.dataset's names (imdb: imdb_reader.h's JSONL, or aclImdb's folders).
enum class ClassificationDataset { nli, headerless_nli, sick, rte, wnli, sst2, imdb };
inline constexpr std::pair<const char*, ClassificationDataset> kClassificationDatasetNames[] = {
    {"nli", ClassificationDataset::nli},   {"headerless_nli", ClassificationDataset::headerless_nli},
    {"sick", ClassificationDataset::sick}, {"rte", ClassificationDataset::rte},
    {"wnli", ClassificationDataset::wnli}, {"sst2", ClassificationDataset::sst2},
    {"imdb", ClassificationDataset::imdb}};

}  // namespace qdq
