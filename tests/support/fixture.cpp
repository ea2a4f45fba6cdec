#include "tests/support/fixture.h"

#include <fstream>
#include <stdexcept>

namespace qdq::testing {

nlohmann::json read_fixture_json(const std::string& file_name, const std::string& made_by) {
    std::string path = std::string(QDQ_FIXTURE_DIR) + "/" + file_name;
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open fixture " + path + " (regenerate it with " + made_by + ")");
    return nlohmann::json::parse(in);
}

Fixture::Fixture(const std::string& file_name)
    : path_(std::string(QDQ_FIXTURE_DIR) + "/" + file_name),
      root_(read_fixture_json(file_name, "tests/fixtures/make_*.py")) {}

const nlohmann::json& Fixture::at(const std::string& case_name) const {
    if (!cases().contains(case_name))
        throw std::runtime_error(path_ + ": no case '" + case_name + "'");
    return cases().at(case_name);
}

Tensor fixture_tensor(const nlohmann::json& case_json, const std::string& name) {
    if (!case_json.contains(name)) throw std::runtime_error("fixture case lacks tensor '" + name + "'");
    const nlohmann::json& t = case_json.at(name);
    Shape shape = t.at("shape").get<Shape>();
    if (t.value("dtype", "float32") == "int32")
        return from_ints(shape, t.at("data").get<std::vector<int32_t>>());
    return from_vector(shape, t.at("data").get<std::vector<float>>());
}

std::string indexed_name(const char* prefix, size_t k) { return prefix + std::to_string(k); }

std::vector<Tensor> fixture_inputs(const nlohmann::json& case_json) {
    std::vector<Tensor> inputs;
    for (size_t k = 0; case_json.contains(indexed_name("x", k)); ++k)
        inputs.push_back(fixture_tensor(case_json, indexed_name("x", k)));
    return inputs;
}

void expect_case_gradients_match_finite_differences(const nlohmann::json& case_json,
                                                    const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                                    const GradcheckOptions& options) {
    const std::vector<Tensor> inputs = fixture_inputs(case_json);
    std::vector<size_t> varied;
    std::vector<Tensor> probes;
    for (size_t k = 0; k < inputs.size(); ++k)
        if (case_json.contains(indexed_name("grad_x", k))) {
            varied.push_back(k);
            probes.push_back(inputs[k]);
        }
    auto of_varied = [&](const std::vector<Tensor>& v) {
        std::vector<Tensor> all = inputs;
        for (size_t i = 0; i < varied.size(); ++i) all[varied[i]] = v[i];
        return f(all);
    };
    expect_gradients_match_finite_differences(of_varied, probes, options);
}

}  // namespace qdq::testing
