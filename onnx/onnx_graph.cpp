#include "onnx/onnx_graph.h"

#include <type_traits>

namespace qdq::onnx_graph {

namespace {

void set_attrs(onnx::NodeProto& node, const std::vector<Attr>& attrs) {
    for (const Attr& a : attrs) {
        onnx::AttributeProto* p = node.add_attribute();
        p->set_name(a.name);
        std::visit(
            [p](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, int64_t>) {
                    p->set_type(onnx::AttributeProto::INT);
                    p->set_i(v);
                } else if constexpr (std::is_same_v<T, float>) {
                    p->set_type(onnx::AttributeProto::FLOAT);
                    p->set_f(v);
                } else {
                    p->set_type(onnx::AttributeProto::INTS);
                    for (int64_t i : v) p->add_ints(i);
                }
            },
            a.value);
    }
}

std::string add_raw(onnx::GraphProto& graph, const std::string& name, int32_t data_type,
                    const std::vector<int64_t>& dims, const void* data, size_t bytes) {
    onnx::TensorProto* t = graph.add_initializer();
    t->set_name(name);
    t->set_data_type(data_type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(data, bytes);  // ONNX's raw_data is little-endian, as this host
    return name;
}

void add_value(onnx::ValueInfoProto* v, const std::string& name, int32_t data_type, const std::vector<Dim>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(data_type);
    onnx::TensorShapeProto* shape = t->mutable_shape();
    for (const Dim& d : dims) {
        onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
        if (const auto* fixed = std::get_if<int64_t>(&d))
            dim->set_dim_value(*fixed);
        else
            dim->set_dim_param(std::get<std::string>(d));
    }
}

}  // namespace

std::string add_node(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                     const std::vector<std::string>& inputs, const std::vector<Attr>& attrs) {
    add_node_outputs(graph, op, name, inputs, {name}, attrs);
    return name;
}

void add_node_outputs(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                      const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                      const std::vector<Attr>& attrs) {
    onnx::NodeProto* node = graph.add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const std::string& in : inputs) node->add_input(in);
    for (const std::string& out : outputs) node->add_output(out);
    set_attrs(*node, attrs);
}

std::string add_f32(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& values) {
    return add_raw(graph, name, onnx::TensorProto::FLOAT, dims, values.data(), values.size() * sizeof(float));
}

std::string add_i64(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& values) {
    return add_raw(graph, name, onnx::TensorProto::INT64, dims, values.data(), values.size() * sizeof(int64_t));
}

std::string add_i8(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<int8_t>& values) {
    return add_raw(graph, name, onnx::TensorProto::INT8, dims, values.data(), values.size());
}

std::string add_zero_point(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                           int32_t data_type, int value) {
    size_t count = 1;
    for (int64_t d : dims) count *= (size_t)d;
    // int8 and uint8 share one byte layout: the low byte of `value` is its two's complement.
    std::vector<uint8_t> bytes(count, (uint8_t)value);
    return add_raw(graph, name, data_type, dims, bytes.data(), bytes.size());
}

void add_input(onnx::GraphProto& graph, const std::string& name, int32_t data_type, const std::vector<Dim>& dims) {
    add_value(graph.add_input(), name, data_type, dims);
}

void add_output(onnx::GraphProto& graph, const std::string& name, int32_t data_type, const std::vector<Dim>& dims) {
    add_value(graph.add_output(), name, data_type, dims);
}

}  // namespace qdq::onnx_graph
