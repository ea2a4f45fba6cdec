// Where the shared data files live (vocabularies, IMDB, SQuAD, MNLI, ...; see PROVENANCE.md there).
#pragma once

#include <string>

namespace qdq {

// $QDQ_DATA_DIR if set and non-empty, else the build's default: ../shared/data beside the
// source tree.
std::string data_dir();

// data_dir() + "/" + relative.
std::string data_path(const std::string& relative);

}  // namespace qdq
