#include "onnx/onnx_probe.h"

#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>

#include <onnx/onnx_pb.h>

namespace qdq {

namespace {

// A float initializer's values, from raw_data (as the export writes them) or float_data.
std::vector<float> float_values(const onnx::TensorProto& t) {
    if (t.data_type() != onnx::TensorProto::FLOAT) return {};
    if (!t.raw_data().empty()) {
        std::vector<float> v(t.raw_data().size() / sizeof(float));
        std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
        return v;
    }
    return {t.float_data().begin(), t.float_data().end()};
}

}  // namespace

std::vector<DequantizedValue> write_dequantized_probe(const std::string& model_path, const std::string& probe_path) {
    onnx::ModelProto model;
    std::ifstream in(model_path, std::ios::binary);
    if (!in || !model.ParseFromIstream(&in)) throw std::runtime_error(model_path + ": not a readable ONNX model");
    onnx::GraphProto& graph = *model.mutable_graph();
    std::map<std::string, const onnx::TensorProto*> initializers;
    for (const onnx::TensorProto& t : graph.initializer()) initializers[t.name()] = &t;
    std::map<std::string, const onnx::NodeProto*> producer;
    for (const onnx::NodeProto& node : graph.node())
        for (const std::string& output : node.output()) producer[output] = &node;
    auto constant = [&](const std::string& name) {
        auto it = initializers.find(name);
        return it == initializers.end() ? std::vector<float>{} : float_values(*it->second);
    };
    std::vector<DequantizedValue> values;
    for (const onnx::NodeProto& node : graph.node()) {
        if (node.op_type() != "DequantizeLinear") continue;
        DequantizedValue v{.output = node.output(0), .scale = constant(node.input(1))};
        auto q = producer.find(node.input(0));
        if (q != producer.end() && q->second->op_type() == "QuantizeLinear") v.quantize_scale = constant(q->second->input(1));
        values.push_back(std::move(v));
    }
    for (const DequantizedValue& v : values) {
        onnx::ValueInfoProto& output = *graph.add_output();
        output.set_name(v.output);
        output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    }
    std::ofstream out(probe_path, std::ios::binary);
    if (!out || !model.SerializeToOstream(&out)) throw std::runtime_error(probe_path + ": cannot write");
    return values;
}

}  // namespace qdq
