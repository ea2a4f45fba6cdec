// Reference fixtures written by tests/fixtures/make_*.py with PyTorch (Debian's python3-torch).
// File layout: {"cases": {"<name>": {"<tensor>": {"shape": [...], "dtype": "float32"|"int32",
// "data": [...]}, ..., "params": {...}}}}.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/tensor.h"
#include "tests/support/gradcheck.h"

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

// The op fixtures' naming: inputs "x0", "x1", ... and their gradients "grad_x0", ...
std::string indexed_name(const char* prefix, size_t k);
std::vector<Tensor> fixture_inputs(const nlohmann::json& case_json);

// Finite differences of `f` (over all of a case's inputs) for the inputs with a reference
// gradient "grad_x<k>"; the others (masks, ids, labels, a teacher's logits) stay as the case has them.
void expect_case_gradients_match_finite_differences(const nlohmann::json& case_json,
                                                    const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                                    const GradcheckOptions& options = {});

// A whole JSON fixture file (relative to tests/fixtures), parsed; `made_by` names the script
// that regenerates it, for the error when it is missing.
nlohmann::json read_fixture_json(const std::string& file_name, const std::string& made_by);

}  // namespace qdq::testing
