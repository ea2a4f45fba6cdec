// JSON files (configs, results, model configs): errors name the file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace qdq {

nlohmann::json read_json_file(const std::string& path);
// Indented by two spaces, with a final newline; replaces the file at once (readers never see
// part of it) or not at all.
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace qdq
