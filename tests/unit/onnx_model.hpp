// Helpers of the ONNX import tests (test_onnx_import.cpp, test_onnx_operators.cpp):
// a model built in memory with the ONNX protobuf classes, attributes, and the
// imported graph's operations.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/onnx/importer.hpp"
#include "core/onnx/internal.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::onnx_import;
using Catch::Matchers::Contains;
using tapestry::testing::failureOf;

namespace {

// A dim of a graph input: a value, or a symbolic name.
struct Dim {
  Dim(std::int64_t v) : value(v) {} // NOLINT: implicit on purpose, {2, "batch"}
  Dim(const char* p) : param(p) {}  // NOLINT
  std::int64_t value = -1;
  std::string param;
};

class Model {
public:
  Model() {
    model_.set_ir_version(8);
    model_.set_producer_name("test");
    ::onnx::OperatorSetIdProto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(17);
    model_.mutable_graph()->set_name("t");
  }
  Model& input(const std::string& name, const std::vector<Dim>& dims,
               int type = ::onnx::TensorProto::FLOAT) {
    ::onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto* shape = t->mutable_shape();
    for (const Dim& d : dims) {
      auto* dim = shape->add_dim();
      d.param.empty() ? dim->set_dim_value(d.value) : dim->set_dim_param(d.param);
    }
    return *this;
  }
  Model& output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  Model& floats(const std::string& name, const std::vector<std::int64_t>& shape,
                const std::vector<float>& values) {
    ::onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (std::int64_t d : shape)
      t->add_dims(d);
    for (float v : values)
      t->add_float_data(v);
    return *this;
  }
  Model& ints(const std::string& name, const std::vector<std::int64_t>& shape,
              const std::vector<std::int64_t>& values) {
    ::onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    for (std::int64_t d : shape)
      t->add_dims(d);
    for (std::int64_t v : values)
      t->add_int64_data(v);
    return *this;
  }
  Model& flag(const std::string& name, bool value) {
    ::onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::BOOL);
    t->add_int32_data(value ? 1 : 0);
    return *this;
  }
  ::onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                          const std::vector<std::string>& out, const std::string& name = "") {
    ::onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& s : in)
      n->add_input(s);
    for (const std::string& s : out)
      n->add_output(s);
    return *n;
  }
  ImportResult import(const ImportOptions& options = {}) const {
    return importModel(model_.SerializeAsString(), "m.onnx", options);
  }
  std::string bytes() const { return model_.SerializeAsString(); }

private:
  ::onnx::ModelProto model_;
};

inline void setInts(::onnx::NodeProto& n, const std::string& name,
                    const std::vector<std::int64_t>& v) {
  ::onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (std::int64_t x : v)
    a->add_ints(x);
}

inline void setInt(::onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  ::onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

inline const Json& op(const ImportResult& r, std::size_t i) {
  return r.graph.at("operations").at(i);
}

// "name:kernel" of each operation, in order.
inline std::vector<std::string> kernelsOf(const ImportResult& r) {
  std::vector<std::string> kernels;
  for (const Json& o : r.graph.at("operations")) {
    kernels.push_back(o.at("name").get<std::string>() + ":" + o.at("kernel").get<std::string>());
  }
  return kernels;
}

// A float32 constant the import made: its shape and values.
inline std::pair<std::vector<std::int64_t>, std::vector<float>>
floatConstant(const ImportResult& r, const std::string& name) {
  const auto it = std::find_if(r.constants.begin(), r.constants.end(),
                               [&](const auto& t) { return t.name == name; });
  REQUIRE(it != r.constants.end());
  std::vector<float> values(it->bytes.size() / 4);
  std::memcpy(values.data(), it->bytes.data(), it->bytes.size());
  return {it->shape, values};
}

inline graph::ExpandedGraph expandImported(const ImportResult& r) {
  return graph::expand(graph::decodeGraph(json::Value(r.graph)), testing::lib());
}

inline void setFloat(::onnx::NodeProto& n, const std::string& name, float v) {
  ::onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

inline void setString(::onnx::NodeProto& n, const std::string& name, const std::string& v) {
  ::onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}

} // namespace
