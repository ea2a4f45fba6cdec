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

onnx::NodeProto& add_node(onnx::GraphProto& graph, const std::string& op, const std::string& output,
                          std::vector<std::string> inputs) {
    onnx::NodeProto& node = *graph.add_node();
    node.set_op_type(op);
    node.set_name(output);
    for (const std::string& input : inputs) node.add_input(input);
    node.add_output(output);
    return node;
}

onnx::NodeProto& add_cast_to_float(onnx::GraphProto& graph, const std::string& output, const std::string& input) {
    onnx::NodeProto& cast = add_node(graph, "Cast", output, {input});
    onnx::AttributeProto& to = *cast.add_attribute();
    to.set_name("to");
    to.set_type(onnx::AttributeProto::INT);
    to.set_i(onnx::TensorProto::FLOAT);
    return cast;
}

// (float(codes) − float(zero point)) · scale under `name`: DequantizeLinear's arithmetic, spelt
// in ops that ONNX Runtime fuses into nothing.
void add_dequantize_branch(onnx::GraphProto& graph, const onnx::NodeProto& quantize, const std::string& name) {
    const std::string codes = add_cast_to_float(graph, name + ".codes", quantize.output(0)).output(0);
    const std::string zero_point = add_cast_to_float(graph, name + ".zero_point", quantize.input(2)).output(0);
    const std::string centered = add_node(graph, "Sub", name + ".centered", {codes, zero_point}).output(0);
    add_node(graph, "Mul", name, {centered, quantize.input(1)});
}

}  // namespace

std::vector<DequantizedValue> write_probe(const std::string& model_path, const std::string& probe_path, ProbeKind kind) {
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
    std::vector<onnx::NodeProto> computed_quantizes;
    for (const onnx::NodeProto& node : graph.node()) {
        if (node.op_type() != "DequantizeLinear") continue;
        DequantizedValue v{.output = node.output(0), .probe_output = node.output(0), .scale = constant(node.input(1))};
        auto q = producer.find(node.input(0));
        const bool quantized_here = q != producer.end() && q->second->op_type() == "QuantizeLinear";
        if (quantized_here) v.quantize_scale = constant(q->second->input(1));
        if (kind == ProbeKind::AsDeployed) {
            if (!quantized_here || initializers.count(q->second->input(0)) || q->second->input_size() < 3) continue;
            v.probe_output = v.output + ".deployed";
            computed_quantizes.push_back(*q->second);  // a copy: the branches below add nodes to the graph
        }
        values.push_back(std::move(v));
    }
    for (size_t i = 0; i < computed_quantizes.size(); ++i) add_dequantize_branch(graph, computed_quantizes[i], values[i].probe_output);
    for (const DequantizedValue& v : values) {
        onnx::ValueInfoProto& output = *graph.add_output();
        output.set_name(v.probe_output);
        output.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    }
    std::ofstream out(probe_path, std::ios::binary);
    if (!out || !model.SerializeToOstream(&out)) throw std::runtime_error(probe_path + ": cannot write");
    return values;
}

}  // namespace qdq
