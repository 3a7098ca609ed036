// Kernel bodies (core/expr/body.hpp): the function table, the checks a body
// gets right after parsing, and the small public helpers. The evaluator, one
// walk over the statements that computes shapes and dtypes always and block
// data (through BlockOps) when asked, is in body_eval.cpp and body_ops.cpp;
// every shape rule lives there once, so `kernels check` (types only) and a run
// (numbers, on the host or on a GPU) cannot disagree about what a body means.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "core/expr/body.hpp"
#include "core/expr/body_internal.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::expr {

namespace body_impl {

const std::map<std::string, FnInfo, std::less<>>& functionTable() {
  static const std::map<std::string, FnInfo, std::less<>> table = [] {
    std::map<std::string, FnInfo, std::less<>> t;
    const std::pair<const char*, UnaryFn> unary[] = {
        {"exp", UnaryFn::Exp},         {"log", UnaryFn::Log},        {"sqrt", UnaryFn::Sqrt},
        {"rsqrt", UnaryFn::Rsqrt},     {"tanh", UnaryFn::Tanh},      {"erf", UnaryFn::Erf},
        {"abs", UnaryFn::Abs},         {"neg", UnaryFn::Neg},        {"relu", UnaryFn::Relu},
        {"sigmoid", UnaryFn::Sigmoid}, {"gelu", UnaryFn::Gelu},      {"floor", UnaryFn::Floor},
        {"ceil", UnaryFn::Ceil},       {"round", UnaryFn::Round},    {"sign", UnaryFn::Sign},
        {"sin", UnaryFn::Sin},         {"cos", UnaryFn::Cos},        {"tan", UnaryFn::Tan},
        {"asin", UnaryFn::Asin},       {"acos", UnaryFn::Acos},      {"atan", UnaryFn::Atan},
        {"sinh", UnaryFn::Sinh},       {"cosh", UnaryFn::Cosh},      {"asinh", UnaryFn::Asinh},
        {"acosh", UnaryFn::Acosh},     {"atanh", UnaryFn::Atanh},    {"isnan", UnaryFn::IsNan},
        {"isinf", UnaryFn::IsInf},     {"logical_not", UnaryFn::Not}};
    for (const auto& [name, fn] : unary) {
      t.emplace(name, FnInfo{Fn::Unary, {"x"}, 1, fn});
    }
    const std::pair<const char*, Fn> reductions[] = {{"sum", Fn::Sum},
                                                     {"mean", Fn::Mean},
                                                     {"max", Fn::Max},
                                                     {"min", Fn::Min},
                                                     {"prod", Fn::Prod}};
    for (const auto& [name, fn] : reductions) {
      t.emplace(name, FnInfo{fn, {"x", "axis", "keepdims"}, 1});
    }
    t.emplace("argmax", FnInfo{Fn::ArgMax, {"x", "axis", "keepdims", "last"}, 2});
    t.emplace("argmin", FnInfo{Fn::ArgMin, {"x", "axis", "keepdims", "last"}, 2});
    t.emplace("transpose", FnInfo{Fn::Transpose, {"x", "perm"}, 1});
    t.emplace("reshape", FnInfo{Fn::Reshape, {"x", "shape"}, 2});
    t.emplace("cast", FnInfo{Fn::Cast, {"x", "dtype"}, 2});
    t.emplace("concat", FnInfo{Fn::Concat, {"blocks", "axis"}, 2});
    t.emplace("slice", FnInfo{Fn::Slice, {"x", "axis", "start", "stop"}, 4});
    t.emplace("maximum", FnInfo{Fn::Maximum, {"a", "b"}, 2});
    t.emplace("minimum", FnInfo{Fn::Minimum, {"a", "b"}, 2});
    t.emplace("pow", FnInfo{Fn::Pow, {"a", "b"}, 2});
    t.emplace("where", FnInfo{Fn::Where, {"condition", "a", "b"}, 3});
    const std::pair<const char*, ElementOp> element[] = {{"mod", ElementOp::Mod},
                                                         {"fmod", ElementOp::Fmod},
                                                         {"equal", ElementOp::Equal},
                                                         {"less", ElementOp::Less},
                                                         {"less_equal", ElementOp::LessEqual},
                                                         {"greater", ElementOp::Greater},
                                                         {"greater_equal", ElementOp::GreaterEqual},
                                                         {"logical_and", ElementOp::And},
                                                         {"logical_or", ElementOp::Or},
                                                         {"logical_xor", ElementOp::Xor}};
    for (const auto& [name, op] : element) {
      t.emplace(name, FnInfo{Fn::Element, {"a", "b"}, 2, UnaryFn::Exp, op});
    }
    return t;
  }();
  return table;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    out += (out.empty() ? "" : ", ") + s;
  }
  return out;
}

std::vector<const BodyNode*> bindArguments(const BodyNode& call, const FnInfo& info) {
  std::vector<const BodyNode*> out(info.args.size(), nullptr);
  for (std::size_t i = 0; i < call.children.size(); ++i) {
    std::size_t slot = i;
    if (!call.keys[i].empty()) {
      auto it = std::find(info.args.begin(), info.args.end(), call.keys[i]);
      if (it == info.args.end()) {
        throw ExprError(call.keyColumns[i], call.name + "() has no argument '" + call.keys[i] +
                                                "' (its arguments: " + joined(info.args) + ")");
      }
      slot = static_cast<std::size_t>(it - info.args.begin());
    } else if (i >= info.args.size()) {
      throw ExprError(call.children[i].column, call.name + "() takes at most " +
                                                   std::to_string(info.args.size()) + " argument" +
                                                   (info.args.size() == 1 ? "" : "s") + " (" +
                                                   joined(info.args) + ")");
    }
    if (out[slot] != nullptr) {
      throw ExprError(call.keyColumns[i],
                      call.name + "() got argument '" + info.args[slot] + "' twice");
    }
    out[slot] = &call.children[i];
  }
  for (std::size_t a = 0; a < info.required; ++a) {
    if (out[a] == nullptr) {
      throw ExprError(call.opColumn, call.name + "() needs argument '" + info.args[a] +
                                         "' (its arguments: " + joined(info.args) + ", the first " +
                                         std::to_string(info.required) + " required)");
    }
  }
  return out;
}

} // namespace body_impl

namespace {

using namespace body_impl;

void checkNode(const BodyNode& n) {
  if (n.kind == BodyKind::Call) {
    auto it = functionTable().find(n.name);
    if (it == functionTable().end()) {
      throw ExprError(n.column,
                      "unknown function '" + n.name + "'; known functions: " + bodyFunctionList());
    }
    (void)bindArguments(n, it->second);
  }
  for (const BodyNode& c : n.children) {
    checkNode(c);
  }
}

} // namespace

void checkBodyNames(const std::vector<BodyStatement>& statements) {
  for (const BodyStatement& st : statements) {
    std::set<std::string> seen;
    for (std::size_t i = 0; i < st.targets.size(); ++i) {
      if (!seen.insert(st.targets[i]).second) {
        throw ExprError(st.targetColumns[i], "'" + st.targets[i] + "' is named twice");
      }
    }
    checkNode(st.value);
  }
}

std::string bodyFunctionList() {
  std::vector<std::string> names;
  for (const auto& entry : functionTable()) {
    names.push_back(entry.first);
  }
  return joined(names);
}

std::string toString(const BlockType& t) {
  return ZPoint(t.shape).toString() + " " + t.dtype;
}

BodyValue BodyValue::block(BlockType type, BlockHandle data) {
  BodyValue v;
  v.kind = Kind::Block;
  v.type = std::move(type);
  v.data = std::move(data);
  return v;
}

const char* BodyValue::kindName() const {
  switch (kind) {
  case Kind::Number:
    return "number";
  case Kind::Bool:
    return "bool";
  case Kind::Ints:
    return "list";
  case Kind::DType:
    return "dtype";
  case Kind::Block:
    return "block";
  case Kind::Blocks:
    return "list of blocks";
  }
  return "?";
}

std::optional<std::vector<std::int64_t>> broadcastShapes(std::span<const std::int64_t> a,
                                                         std::span<const std::int64_t> b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) {
      return std::nullopt;
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::map<std::string, BodyValue, std::less<>> evaluateBody(const Body& body,
                                                           const BodyEnvironment& env) {
  if (env.numeric && env.ops == nullptr) {
    throw InternalError("evaluateBody: numbers asked for without block operations");
  }
  return body_impl::Evaluator(env).run(body);
}

} // namespace tapestry::expr
