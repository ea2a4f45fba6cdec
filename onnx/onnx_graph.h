// Writing an ONNX graph by hand with ONNX's own protobuf classes (Debian's libonnx-dev): one
// node per op, each node's single output named after the node, so a value in Netron or in an
// error message names the op that made it. Initializers come from host data, little-endian raw.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

namespace qdq::onnx_graph {

struct Attr {
    std::string name;
    std::variant<int64_t, float, std::vector<int64_t>> value;
};

// A node with a single output named `name`; returns that name. Names must be unique.
std::string add_node(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                     const std::vector<std::string>& inputs, const std::vector<Attr>& attrs = {});

// A node with outputs named explicitly (Split).
void add_node_outputs(onnx::GraphProto& graph, const std::string& op, const std::string& name,
                      const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                      const std::vector<Attr>& attrs = {});

std::string add_f32(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& values);
std::string add_i64(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<int64_t>& values);
std::string add_i8(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<int8_t>& values);
// A zero point: int8 or uint8 (ONNX's TensorProto data_type), every element `value`.
std::string add_zero_point(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                           int32_t data_type, int value);

// A dimension: fixed (int64) or symbolic ("batch").
using Dim = std::variant<int64_t, std::string>;
void add_input(onnx::GraphProto& graph, const std::string& name, int32_t data_type, const std::vector<Dim>& dims);
void add_output(onnx::GraphProto& graph, const std::string& name, int32_t data_type, const std::vector<Dim>& dims);

}  // namespace qdq::onnx_graph
