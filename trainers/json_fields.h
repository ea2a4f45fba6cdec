// Strict reading of a JSON object's fields: each known key is read with a type check, and
// finish() rejects every key nobody read, naming it by its dotted path ("training.lerning_rate").
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdq {

class JsonFields {
public:
    // `path` is the object's dotted location ("" for the root); `source` names the file.
    JsonFields(const nlohmann::json& object, std::string path, std::string source);

    // Optional fields: `out` keeps its default when the key is absent.
    void read(const char* key, bool& out);
    void read(const char* key, int64_t& out);
    void read(const char* key, int& out);
    void read(const char* key, uint64_t& out);
    void read(const char* key, double& out);
    void read(const char* key, std::string& out);
    void read(const char* key, std::vector<std::string>& out);  // a string or a list of them
    void read(const char* key, nlohmann::json& out);            // any value, unchecked

    bool has(const char* key) const { return object_.contains(key); }
    // A nested object (empty when absent); read it with its own JsonFields.
    const nlohmann::json& section(const char* key);
    std::string path_of(const char* key) const;
    const std::string& source() const { return source_; }
    [[noreturn]] void fail(const char* key, const std::string& what) const;

    void finish() const;

private:
    const nlohmann::json* value(const char* key);

    const nlohmann::json& object_;
    std::string path_, source_;
    std::set<std::string> read_;
};

}  // namespace qdq
