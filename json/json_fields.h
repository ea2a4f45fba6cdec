// Strict reading of a JSON object's fields, the one reader every settings parser uses: each
// known key is read with a type check, and finish() rejects every key nobody read, naming it by
// its dotted path ("training.lerning_rate") and the file it came from.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdq {

// Settings that name one of a few values, as a table of (name, value) pairs.
template <typename E, typename Choices>
std::optional<E> choice_named(const std::string& name, const Choices& choices) {
    for (const auto& [choice, e] : choices)
        if (name == choice) return e;
    return std::nullopt;
}
template <typename Choices>
std::string choice_names(const Choices& choices) {
    std::string names;
    for (const auto& [choice, e] : choices) names += (names.empty() ? "" : ", ") + std::string(choice);
    return names;
}
template <typename E, typename Choices>
const char* name_of_choice(E value, const Choices& choices) {
    for (const auto& [choice, e] : choices)
        if (e == value) return choice;
    return "?";
}

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
    void read(const char* key, float& out);
    void read(const char* key, std::string& out);
    void read(const char* key, std::vector<std::string>& out);  // a string or a list of them
    void read(const char* key, std::vector<int>& out);          // a list of integers
    void read(const char* key, std::optional<int64_t>& out);    // an integer, or null for none
    void read(const char* key, std::optional<double>& out);     // a number, or null for none
    void read(const char* key, std::optional<bool>& out);       // true, false, or null for none
    void read(const char* key, nlohmann::json& out);            // any value, unchecked

    // A string naming one of `choices` (pairs of name and value); the error lists the names.
    template <typename E, typename Choices>
    void read_choice(const char* key, E& out, const Choices& choices) {
        std::string name;
        read(key, name);
        if (name.empty() && !has(key)) return;
        if (std::optional<E> e = choice_named<E>(name, choices)) out = *e;
        else fail(key, "must be one of " + choice_names(choices) + "; got '" + name + "'");
    }
    template <typename E>
    void read_choice(const char* key, E& out, std::initializer_list<std::pair<const char*, E>> choices) {
        read_choice<E, std::initializer_list<std::pair<const char*, E>>>(key, out, choices);
    }

    // Keys that are allowed and have no effect here (fields other programs write).
    void ignore(const char* key) { read_.insert(key); }
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
