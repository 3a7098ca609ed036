// ONNX elementwise comparisons, logic, math and activations as
// standard-library operations (docs/reference/onnx.md has the table): Equal,
// Less, ..., And, Or, Xor, Not, Max/Min, Mod, PRelu, LeakyRelu/Elu/Selu/...,
// IsInf, and Clip with tensor bounds. ops.cpp's table maps the operators here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/onnx/ops_util.hpp"

namespace tapestry::onnx_import::detail {

// Operators that map to one broadcasting binary kernel (inputs A, B).
const std::map<std::string, std::string>& binaryKernels() {
  static const std::map<std::string, std::string> table = {{"Equal", "equal"},
                                                           {"Less", "less"},
                                                           {"LessOrEqual", "less_equal"},
                                                           {"Greater", "greater"},
                                                           {"GreaterOrEqual", "greater_equal"},
                                                           {"And", "logical_and"},
                                                           {"Or", "logical_or"},
                                                           {"Xor", "logical_xor"}};
  return table;
}

// Operators that map to one unary kernel without params (input).
const std::map<std::string, std::string>& mathKernels() {
  static const std::map<std::string, std::string> table = {
      {"Not", "logical_not"}, {"IsNaN", "isnan"},       {"Sign", "sign"},        {"Floor", "floor"},
      {"Ceil", "ceil"},       {"Round", "round"},       {"Sin", "sin"},          {"Cos", "cos"},
      {"Tan", "tan"},         {"Asin", "asin"},         {"Acos", "acos"},        {"Atan", "atan"},
      {"Sinh", "sinh"},       {"Cosh", "cosh"},         {"Asinh", "asinh"},      {"Acosh", "acosh"},
      {"Atanh", "atanh"},     {"Softplus", "softplus"}, {"Softsign", "softsign"}};
  return table;
}

void binaryKernel(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), binaryKernels().at(node.op_type()), Json::object(),
         Json{{"A", e.use(node.input(0))}, {"B", e.use(node.input(1))}}, result(node));
}

void mathKernel(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), mathKernels().at(node.op_type()), Json::object(),
         Json{{"input", e.use(node.input(0))}}, result(node));
}

// `inputs` folded left to right through the binary `kernel` into the node's
// output (NumPy broadcasting at each step); one input is an alias.
void chain(Emitter& e, const NodeProto& node, const std::string& kernel,
           const std::vector<std::string>& inputs) {
  if (inputs.size() == 1) {
    e.alias(node.output(0), inputs[0]);
    return;
  }
  std::string acc = e.use(inputs[0]);
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    const bool last = i + 1 == inputs.size();
    const std::string step = kernel + std::to_string(i);
    const std::string out = last ? node.output(0) : e.tempName(node, step);
    e.emit(e.opName(node, last ? "" : step), kernel, Json::object(),
           Json{{"A", acc}, {"B", e.use(inputs[i])}}, Json{{"result", out}});
    acc = out;
  }
}

// Max, Min of n inputs: a chain of maximum / minimum.
void extremum(Emitter& e, const NodeProto& node) {
  std::vector<std::string> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    if (!node.input(i).empty()) {
      inputs.push_back(node.input(i));
    }
  }
  if (inputs.empty()) {
    e.fail(node, "it has no inputs");
  }
  chain(e, node, node.op_type() == "Max" ? "maximum" : "minimum", inputs);
}

// Mod: fmod 0 is the remainder with the divisor's sign (`mod`), fmod 1 the
// one with the dividend's (`fmod`).
void mod(Emitter& e, const NodeProto& node) {
  const std::int64_t fmod = intAttribute(node, "fmod", 0);
  if (fmod != 0 && fmod != 1) {
    e.fail(node, "fmod is " + std::to_string(fmod) + "; ONNX allows 0 or 1");
  }
  e.emit(e.opName(node, ""), fmod == 1 ? "fmod" : "mod", Json::object(),
         Json{{"A", e.use(node.input(0))}, {"B", e.use(node.input(1))}}, result(node));
}

// PRelu: a slope [C] that does not broadcast against X [N, C, ...] the NumPy
// way is the per-channel slope of opsets before 7 (which the version converter
// leaves as it is): reshaped to [C, 1, ...] first.
void prelu(Emitter& e, const NodeProto& node) {
  std::string slope = e.use(node.input(1));
  const std::optional<Shape> x = e.knownShape(node.input(0));
  const std::optional<Shape> s = e.knownShape(node.input(1));
  if (x && s && s->size() == 1 && x->size() >= 2 && (*s)[0] == (*x)[1] && (*s)[0] != 1 &&
      (*s)[0] != x->back()) {
    Shape perChannel(x->size() - 1, 1);
    perChannel[0] = (*s)[0];
    const std::string reshaped = e.tempName(node, "slope");
    e.emit(e.opName(node, "slope"), "reshape", Json{{"shape", intsJson(perChannel)}},
           Json{{"input", slope}}, Json{{"result", reshaped}});
    slope = reshaped;
  }
  e.emit(e.opName(node, ""), "prelu", Json::object(),
         Json{{"X", e.use(node.input(0))}, {"slope", slope}}, result(node));
}

// LeakyRelu, Elu, Selu, Celu, ThresholdedRelu: one kernel, the float
// attributes as params (ONNX's defaults).
void activation(Emitter& e, const NodeProto& node) {
  const std::string& op = node.op_type();
  std::string kernel;
  Json params = Json::object();
  if (op == "LeakyRelu") {
    kernel = "leaky_relu";
    params["alpha"] = floatAttribute(node, "alpha", 0.01f);
  } else if (op == "Elu") {
    kernel = "elu";
    params["alpha"] = floatAttribute(node, "alpha", 1.0f);
  } else if (op == "Selu") {
    kernel = "selu";
    params["alpha"] = floatAttribute(node, "alpha", 1.67326319217681884765625f);
    params["gamma"] = floatAttribute(node, "gamma", 1.05070102214813232421875f);
  } else if (op == "Celu") {
    kernel = "celu";
    const float alpha = floatAttribute(node, "alpha", 1.0f);
    if (alpha == 0) {
      e.fail(node, "alpha is 0; Celu divides by it");
    }
    params["alpha"] = alpha;
  } else {
    kernel = "thresholded_relu";
    params["alpha"] = floatAttribute(node, "alpha", 1.0f);
  }
  e.emit(e.opName(node, ""), kernel, std::move(params), Json{{"input", e.use(node.input(0))}},
         result(node));
}

// IsInf: isinf, then, when only one sign is asked for, and the sign test.
void isinf(Emitter& e, const NodeProto& node) {
  const bool negative = intAttribute(node, "detect_negative", 1) != 0;
  const bool positive = intAttribute(node, "detect_positive", 1) != 0;
  if (!negative && !positive) {
    e.fail(node, "detect_negative and detect_positive are both 0 (an all-false result); "
                 "tapestry needs at least one");
  }
  const std::string x = e.use(node.input(0));
  if (negative && positive) {
    e.emit(e.opName(node, ""), "isinf", Json::object(), Json{{"input", x}}, result(node));
    return;
  }
  const std::string inf = e.tempName(node, "isinf");
  const std::string sign = e.tempName(node, positive ? "positive" : "negative");
  const std::string zero =
      e.addConstant(e.tempName(node, "zero"), makeConstant(e.typeOf(node.input(0)), {}, {0.0}));
  e.emit(e.opName(node, "isinf"), "isinf", Json::object(), Json{{"input", x}},
         Json{{"result", inf}});
  e.emit(e.opName(node, "sign"), positive ? "greater" : "less", Json::object(),
         Json{{"A", x}, {"B", e.use(zero)}}, Json{{"result", sign}});
  e.emit(e.opName(node, ""), "logical_and", Json::object(), Json{{"A", inf}, {"B", sign}},
         result(node));
}

// Clip whose bounds are not all one-element constants, or whose input is not
// a float (the clip kernel takes float params on float tensors): maximum with
// the min tensor, then minimum with the max tensor.
void clipByTensors(Emitter& e, const NodeProto& node) {
  std::string acc = e.use(node.input(0));
  const bool hasMin = hasInput(node, 1);
  const bool hasMax = hasInput(node, 2);
  if (!hasMin && !hasMax) {
    e.alias(node.output(0), node.input(0));
    return;
  }
  if (hasMin) {
    const std::string out = hasMax ? e.tempName(node, "clip_min") : node.output(0);
    e.emit(e.opName(node, hasMax ? "min" : ""), "maximum", Json::object(),
           Json{{"A", acc}, {"B", e.use(node.input(1))}}, Json{{"result", out}});
    acc = out;
  }
  if (hasMax) {
    e.emit(e.opName(node, ""), "minimum", Json::object(),
           Json{{"A", acc}, {"B", e.use(node.input(2))}}, result(node));
  }
}

} // namespace tapestry::onnx_import::detail
