// Reference fixtures written by tests/fixtures/make_*.py with PyTorch (Debian's python3-torch).
// File layout: {"cases": {"<name>": {"<tensor>": {"shape": [...], "dtype": "float32"|"int32",
// "data": [...]}, ..., "params": {...}}}}.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "autograd/tensor.h"

namespace qdq::testing {

class Fixture {
public:
    explicit Fixture(const std::string& file_name);  // relative to tests/fixtures
    const nlohmann::json& cases() const { return root_.at("cases"); }
    const nlohmann::json& at(const std::string& case_name) const;

private:
    std::string path_;
    nlohmann::json root_;
};

Tensor fixture_tensor(const nlohmann::json& case_json, const std::string& name);

}  // namespace qdq::testing
