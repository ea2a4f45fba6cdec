// Whole-file reads of gzip-compressed data files (the IMDB, SQuAD and MNLI files are .gz).
#pragma once

#include <string>

namespace qdq {

// The decompressed content. Throws std::runtime_error naming the file if it cannot be read or
// is not valid gzip.
std::string read_gzip_file(const std::string& path);

}  // namespace qdq
