// JSON files (configs, results, model configs): errors name the file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace qdq {

// Throws naming the file: a directory, a file that cannot be opened, or text that is not JSON
// (with its line and column).
nlohmann::json read_json_file(const std::string& path);
// A JSON library error as a sentence: its message without the "[json.exception.parse_error.101] "
// tag, which names the library's exception type and tells the reader nothing.
inline std::string json_error_text(const nlohmann::json::exception& e) {
    const std::string what = e.what();
    const size_t tag_end = what.starts_with("[json.exception.") ? what.find("] ") : std::string::npos;
    return tag_end == std::string::npos ? what : what.substr(tag_end + 2);
}
// json_error_text of one line of a JSON Lines file, whose caller names the line: the library,
// which parsed that line alone, says "at line 1, column C"; this says "at column C".
inline std::string json_line_error_text(const nlohmann::json::parse_error& e) {
    const std::string library_line = " at line 1, column ";
    std::string text = json_error_text(e);
    const size_t at = text.find(library_line);
    return at == std::string::npos ? text : text.replace(at, library_line.size(), " at column ");
}
// Indented by two spaces, with a final newline; replaces the file at once (readers never see
// part of it) or not at all.
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace qdq
