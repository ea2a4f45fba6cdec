#include "json/json_file.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace qdq {

nlohmann::json read_json_file(const std::string& path) {
    if (std::filesystem::is_directory(path)) throw std::runtime_error(path + ": is a directory, not a JSON file");
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw std::runtime_error(path + ": not valid JSON: " + json_error_text(e));
    }
}

// Written beside the file and renamed over it, as checkpoints are, so that another process
// reading it (a sweep reporting on a run that is still finishing) sees the old file or the new
// one, never half of one; and a write that fails, or a value that cannot be dumped, leaves the
// old file whole.
void write_json_file(const std::string& path, const nlohmann::json& j) {
    const std::string text = j.dump(2) + '\n';
    const std::string tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();  // the last bytes reach the file here, and a full disk shows here
    if (!out) {
        std::filesystem::remove(tmp);
        throw std::runtime_error(path + ": cannot write");
    }
    std::filesystem::rename(tmp, path);
}

}  // namespace qdq
