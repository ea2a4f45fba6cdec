#include "json/json_file.h"

#include <fstream>
#include <stdexcept>

namespace qdq {

nlohmann::json read_json_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw std::runtime_error(path + ": not valid JSON: " + e.what());
    }
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
    std::ofstream out(path, std::ios::trunc);
    out << j.dump(2) << '\n';
    if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace qdq
