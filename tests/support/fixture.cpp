#include "tests/support/fixture.h"

#include <fstream>
#include <stdexcept>

namespace qdq::testing {

Fixture::Fixture(const std::string& file_name) : path_(std::string(QDQ_FIXTURE_DIR) + "/" + file_name) {
    std::ifstream in(path_);
    if (!in) throw std::runtime_error("cannot open fixture " + path_ +
                                      " (regenerate it with tests/fixtures/make_*.py)");
    root_ = nlohmann::json::parse(in);
}

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

}  // namespace qdq::testing
