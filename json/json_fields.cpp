#include "json/json_fields.h"

#include <cstdint>
#include <stdexcept>

namespace qdq {

JsonFields::JsonFields(const nlohmann::json& object, std::string path, std::string source)
    : object_(object), path_(std::move(path)), source_(std::move(source)) {
    if (!object_.is_object())
        throw std::runtime_error(source_ + ": " + (path_.empty() ? "the config" : "'" + path_ + "'") +
                                 " must be a JSON object");
}

std::string JsonFields::path_of(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

void JsonFields::fail(const char* key, const std::string& what) const {
    throw std::runtime_error(source_ + ": '" + path_of(key) + "' " + what);
}

const nlohmann::json* JsonFields::value(const char* key) {
    read_.insert(key);
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
}

void JsonFields::read(const char* key, bool& out) {
    if (const nlohmann::json* v = value(key)) {
        if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
        out = v->get<bool>();
    }
}

void JsonFields::read(const char* key, int64_t& out) {
    if (const nlohmann::json* v = value(key)) {
        if (!v->is_number_integer()) fail(key, "must be an integer, got " + v->dump());
        out = v->get<int64_t>();
    }
}

void JsonFields::read(const char* key, int& out) {
    int64_t wide = out;
    read(key, wide);
    if (wide < INT32_MIN || wide > INT32_MAX) fail(key, "is out of range");
    out = (int)wide;
}

void JsonFields::read(const char* key, uint64_t& out) {
    if (const nlohmann::json* v = value(key)) {
        // Parsed text gives unsigned numbers; JSON built in code gives signed ones.
        const bool ok = v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0);
        if (!ok) fail(key, "must be a non-negative integer, got " + v->dump());
        out = v->get<uint64_t>();
    }
}

void JsonFields::read(const char* key, double& out) {
    if (const nlohmann::json* v = value(key)) {
        if (!v->is_number()) fail(key, "must be a number, got " + v->dump());
        out = v->get<double>();
    }
}

void JsonFields::read(const char* key, float& out) {
    double wide = out;
    read(key, wide);
    out = (float)wide;
}

void JsonFields::read(const char* key, std::string& out) {
    if (const nlohmann::json* v = value(key)) {
        if (!v->is_string()) fail(key, "must be a string, got " + v->dump());
        out = v->get<std::string>();
    }
}

void JsonFields::read(const char* key, std::vector<std::string>& out) {
    if (const nlohmann::json* v = value(key)) {
        if (v->is_string()) {
            out = {v->get<std::string>()};
            return;
        }
        if (!v->is_array()) fail(key, "must be a string or a list of strings, got " + v->dump());
        out.clear();
        for (const nlohmann::json& item : *v) {
            if (!item.is_string()) fail(key, "must hold strings only, got " + item.dump());
            out.push_back(item.get<std::string>());
        }
    }
}

// Each element is checked first: get<std::vector<int>> turns 1.5 into 1.
void JsonFields::read(const char* key, std::vector<int>& out) {
    if (const nlohmann::json* v = value(key)) {
        if (!v->is_array()) fail(key, "must be a list of integers, got " + v->dump());
        out.clear();
        for (const nlohmann::json& item : *v) {
            if (!item.is_number_integer() || item.get<int64_t>() < INT32_MIN || item.get<int64_t>() > INT32_MAX)
                fail(key, "must hold integers only, got " + item.dump());
            out.push_back(item.get<int>());
        }
    }
}

namespace {

// A nullable field's value: none for null; otherwise `valid` says whether it holds `what`.
template <typename T>
std::optional<T> nullable(const JsonFields& fields, const char* key, const nlohmann::json& v, bool valid,
                          const char* what) {
    if (v.is_null()) return std::nullopt;
    if (!valid) fields.fail(key, std::string("must be ") + what + " or null, got " + v.dump());
    return v.get<T>();
}

}  // namespace

void JsonFields::read(const char* key, std::optional<int64_t>& out) {
    if (const nlohmann::json* v = value(key))
        out = nullable<int64_t>(*this, key, *v, v->is_number_integer(), "an integer");
}

void JsonFields::read(const char* key, std::optional<bool>& out) {
    if (const nlohmann::json* v = value(key)) out = nullable<bool>(*this, key, *v, v->is_boolean(), "true, false");
}

void JsonFields::read(const char* key, std::optional<double>& out) {
    if (const nlohmann::json* v = value(key)) out = nullable<double>(*this, key, *v, v->is_number(), "a number");
}

void JsonFields::read(const char* key, nlohmann::json& out) {
    if (const nlohmann::json* v = value(key)) out = *v;
}

const nlohmann::json& JsonFields::section(const char* key) {
    static const nlohmann::json empty = nlohmann::json::object();
    const nlohmann::json* v = value(key);
    if (!v) return empty;
    if (!v->is_object()) fail(key, "must be an object, got " + v->dump());
    return *v;
}

void JsonFields::finish() const {
    for (const auto& [key, v] : object_.items())
        if (!read_.count(key)) fail(key.c_str(), "is not a known setting");
}

}  // namespace qdq
