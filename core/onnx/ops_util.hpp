// Helpers the ONNX operator handlers share, and the handlers that live outside
// ops.cpp (ops_index.cpp: reductions, indexing and shape operators; ops_math.cpp:
// elementwise comparisons, logic, math and activations; ops_window.cpp:
// convolutions and pools; ops_resize.cpp: Resize), which ops.cpp's table names.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/diag/error.hpp"
#include "core/onnx/internal.hpp"

namespace tapestry::onnx_import::detail {

using ::onnx::NodeProto;
using Shape = std::vector<std::int64_t>;

inline bool hasInput(const NodeProto& node, int i) {
  return node.input_size() > i && !node.input(i).empty();
}

inline bool outputUsed(const NodeProto& node, int i) {
  return node.output_size() > i && !node.output(i).empty();
}

// A tapestry dtype the float-only kernels take.
inline bool isFloatDtype(const std::string& dtype) {
  return dtype == "float32" || dtype == "float64" || dtype == "float16" || dtype == "bfloat16";
}

inline Json result(const NodeProto& node) {
  return Json{{"result", node.output(0)}};
}

// The single value of a one-element constant operand, when it is one.
inline std::optional<double> scalarOf(const Emitter& e, const std::string& name) {
  const Constant* c = e.constant(name);
  if (c == nullptr || c->count() != 1 || !c->present || !isFoldable(c->type)) {
    return std::nullopt;
  }
  const double v = c->values()[0];
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; // JSON holds no inf
}

// Input i of `node` is no constant and import needs its value: NeedsConstant,
// which importModel answers from import --values when it can.
[[noreturn]] inline void needsConstant(const Emitter& e, const NodeProto& node, int i,
                                       const char* what) {
  throw NeedsConstant(SourceLocation{e.file(), 0, 0, {}},
                      "node " + node.name() + " (" + node.op_type() + "): its " + what + " input " +
                          node.input(i) +
                          " is not a constant; tapestry needs it at import (a graph input's "
                          "value can be given with import --values)",
                      e.resolve(node.input(i)));
}

inline std::vector<std::int64_t> constantInts(Emitter& e, const NodeProto& node, int i,
                                              const char* what) {
  const Constant* c = e.constant(node.input(i));
  if (c == nullptr) {
    needsConstant(e, node, i, what);
  }
  if (!isFoldable(c->type)) {
    e.fail(node, std::string("its ") + what + " input " + node.input(i) +
                     " is not a constant; tapestry needs it at import");
  }
  return c->ints();
}

inline Json intsJson(const Shape& v) {
  Json a = Json::array();
  for (std::int64_t x : v) {
    a.push_back(x);
  }
  return a;
}

// ops_index.cpp
void reduce(Emitter& e, const NodeProto& node);
void argReduce(Emitter& e, const NodeProto& node);
void trilu(Emitter& e, const NodeProto& node);
void cumsum(Emitter& e, const NodeProto& node);
void depthSpace(Emitter& e, const NodeProto& node);
void tile(Emitter& e, const NodeProto& node);
void hardmax(Emitter& e, const NodeProto& node);
void expand(Emitter& e, const NodeProto& node);
void pad(Emitter& e, const NodeProto& node);
// A new constant `name` of `shape` with dim `axis` `width` long, every
// element `value` (of `type`, which isFoldable accepts): the blocks that
// constant padding concatenates to a tensor.
std::string constantBlock(Emitter& e, const std::string& name, int type, Shape shape,
                          std::size_t axis, std::int64_t width, double value);
void gatherElements(Emitter& e, const NodeProto& node);

// ops_window.cpp
void conv(Emitter& e, const NodeProto& node);
void convTranspose(Emitter& e, const NodeProto& node);
void pool(Emitter& e, const NodeProto& node);
void globalAvgPool(Emitter& e, const NodeProto& node);

// ops_resize.cpp
void resize(Emitter& e, const NodeProto& node);

// ops_math.cpp; the operators that map to one binary kernel (inputs A, B) and
// to one unary kernel, by ONNX name.
const std::map<std::string, std::string>& binaryKernels();
const std::map<std::string, std::string>& mathKernels();
void binaryKernel(Emitter& e, const NodeProto& node);
void mathKernel(Emitter& e, const NodeProto& node);
void extremum(Emitter& e, const NodeProto& node);
void mod(Emitter& e, const NodeProto& node);
void prelu(Emitter& e, const NodeProto& node);
void activation(Emitter& e, const NodeProto& node);
void isinf(Emitter& e, const NodeProto& node);
void clipByTensors(Emitter& e, const NodeProto& node);

} // namespace tapestry::onnx_import::detail
