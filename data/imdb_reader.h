// The Large Movie Review Dataset (Maas et al. 2011) in each form it travels in. Labels:
// negative 0, positive 1; unlabelled reviews get -1.
//
// - The original folder layout: aclImdb/{train,test}/{neg,pos}/<n>_<rating>.txt and
//   aclImdb/train/unsup/<n>_0.txt. The ids are those of the JSONL files here: "<split>_<neg|pos>_<n>"
//   and "<folder>_<n>" ("unsup_<n>"), the split or folder being the directory's own name. Reviews
//   come negative first, then positive, each by n (as the JSONL files are sorted). A file name
//   that is not <n>_<rating>.txt, a rating that contradicts the folder (the release rates
//   negative 1-4, positive 7-10, unlabelled 0), or any other entry is an error naming the file.
// - JSONL (*.jsonl[.gz]): {"id", "label": 0|1, "text"}; the unlabelled file has no "label".
// - Kaggle's CSV (*.csv[.gz]): review,sentiment with negative/positive, RFC 4180 quoting.
// The text is kept as the release has it, <br /> tags included.
#pragma once

#include <string>

#include "data/classification_reader.h"

namespace qdq {

// path: a split folder (aclImdb/train, holding neg/ and pos/), or with labelled = false a folder
// of unlabelled reviews (aclImdb/train/unsup); else a JSONL or CSV file. Throws
// std::runtime_error naming the file (and line) on bad input.
ClassificationData read_imdb(const std::string& path, bool labelled = true);

ClassificationOptions imdb_jsonl_options(bool labelled = true);
ClassificationOptions imdb_csv_options();

}  // namespace qdq
