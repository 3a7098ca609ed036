// The body evaluator (core/expr/body.hpp): one walk over the statements that
// computes shapes and dtypes always, and float64 data when asked. Every shape
// rule lives here once, so `kernels check` (types only) and a run (numbers)
// cannot disagree about what a body means.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include "core/expr/body.hpp"
#include "core/expr/body_internal.hpp"
#include "core/expr/dtype.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::expr {

namespace {

using Kind = BodyValue::Kind;
using Shape = std::vector<std::int64_t>;

// ---------------------------------------------------------------- functions

enum class Fn : std::uint8_t {
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Tanh,
  Erf,
  Abs,
  Neg,
  Sigmoid,
  Relu,
  Gelu,
  Sum,
  Mean,
  Max,
  Min,
  Transpose,
  Reshape,
  Cast,
  Concat,
  Slice,
  Maximum,
  Minimum,
};

struct FnInfo {
  Fn fn;
  std::vector<std::string> args; // in positional order
  std::size_t required;          // the first `required` must be given
};

const std::map<std::string, FnInfo, std::less<>>& functionTable() {
  static const std::map<std::string, FnInfo, std::less<>> table = [] {
    std::map<std::string, FnInfo, std::less<>> t;
    const std::pair<const char*, Fn> unary[] = {
        {"exp", Fn::Exp},   {"log", Fn::Log},         {"sqrt", Fn::Sqrt}, {"rsqrt", Fn::Rsqrt},
        {"tanh", Fn::Tanh}, {"erf", Fn::Erf},         {"abs", Fn::Abs},   {"neg", Fn::Neg},
        {"relu", Fn::Relu}, {"sigmoid", Fn::Sigmoid}, {"gelu", Fn::Gelu}};
    for (const auto& [name, fn] : unary) {
      t.emplace(name, FnInfo{fn, {"x"}, 1});
    }
    const std::pair<const char*, Fn> reductions[] = {
        {"sum", Fn::Sum}, {"mean", Fn::Mean}, {"max", Fn::Max}, {"min", Fn::Min}};
    for (const auto& [name, fn] : reductions) {
      t.emplace(name, FnInfo{fn, {"x", "axis", "keepdims"}, 1});
    }
    t.emplace("transpose", FnInfo{Fn::Transpose, {"x", "perm"}, 1});
    t.emplace("reshape", FnInfo{Fn::Reshape, {"x", "shape"}, 2});
    t.emplace("cast", FnInfo{Fn::Cast, {"x", "dtype"}, 2});
    t.emplace("concat", FnInfo{Fn::Concat, {"blocks", "axis"}, 2});
    t.emplace("slice", FnInfo{Fn::Slice, {"x", "axis", "start", "stop"}, 4});
    t.emplace("maximum", FnInfo{Fn::Maximum, {"a", "b"}, 2});
    t.emplace("minimum", FnInfo{Fn::Minimum, {"a", "b"}, 2});
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

// The call's arguments by parameter position (nullptr: not given).
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

// ---------------------------------------------------------------- helpers

bool isFloatDType(std::string_view d) {
  return d == "float32" || d == "float64" || d == "float16" || d == "bfloat16";
}

std::int64_t elementCount(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) {
    n *= e;
  }
  return n;
}

Shape rowMajor(const Shape& s) {
  Shape strides(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * s[d];
  }
  return strides;
}

// Strides that read an operand of shape `s` broadcast to `out` (0 on broadcast dims).
Shape broadcastStrides(const Shape& s, const Shape& out) {
  Shape own = rowMajor(s);
  Shape strides(out.size(), 0);
  const std::size_t offset = out.size() - s.size();
  for (std::size_t d = 0; d < s.size(); ++d) {
    strides[offset + d] = s[d] == 1 ? 0 : own[d];
  }
  return strides;
}

// Calls fn(element index, operand offsets) over every element of `shape` in
// row-major order, tracking one offset per operand stride vector.
template <class Fn>
void forEachElement(const Shape& shape, const std::vector<Shape>& strides, Fn&& fn) {
  const std::int64_t total = elementCount(shape);
  if (total == 0) {
    return;
  }
  const std::size_t rank = shape.size();
  Shape counter(rank, 0);
  std::vector<std::int64_t> offsets(strides.size(), 0);
  for (std::int64_t i = 0; i < total; ++i) {
    fn(i, offsets);
    for (std::size_t d = rank; d-- > 0;) {
      if (++counter[d] < shape[d]) {
        for (std::size_t o = 0; o < strides.size(); ++o) {
          offsets[o] += strides[o][d];
        }
        break;
      }
      for (std::size_t o = 0; o < strides.size(); ++o) {
        offsets[o] -= strides[o][d] * (shape[d] - 1);
      }
      counter[d] = 0;
    }
  }
}

std::string shapeText(const Shape& s) {
  return ZPoint(s).toString();
}

double gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440));
}

class Evaluator {
public:
  explicit Evaluator(const BodyEnvironment& env) : env_(env) {}

  std::map<std::string, BodyValue, std::less<>> run(const Body& body) {
    for (const BodyStatement& st : body.statements()) {
      BodyValue value = eval(st.value);
      if (st.targets.size() == 1) {
        bindTarget(st, 0, std::move(value));
        continue;
      }
      if (value.kind != Kind::Blocks || value.blocks.size() != st.targets.size()) {
        throw ExprError(st.value.column, std::to_string(st.targets.size()) +
                                             " names but the value is " + describe(value));
      }
      for (std::size_t i = 0; i < st.targets.size(); ++i) {
        bindTarget(st, i, std::move(value.blocks[i]));
      }
    }
    return std::move(locals_);
  }

private:
  const BodyEnvironment& env_;
  std::map<std::string, BodyValue, std::less<>> locals_;

  bool numeric() const { return env_.numeric; }

  static std::string describe(const BodyValue& v) {
    switch (v.kind) {
    case Kind::Block:
      return "a block " + toString(v.type);
    case Kind::Blocks:
      return "a list of " + std::to_string(v.blocks.size()) + " blocks";
    case Kind::Number:
      return "a number";
    case Kind::Bool:
      return "a bool";
    case Kind::Ints:
      return "a list";
    case Kind::DType:
      return "a dtype";
    }
    return "?";
  }

  void bindTarget(const BodyStatement& st, std::size_t i, BodyValue value) {
    const std::string& name = st.targets[i];
    if (env_.inputs.count(name) > 0) {
      throw ExprError(st.targetColumns[i],
                      "'" + name + "' is an input block; give the result another name");
    }
    if (locals_.count(name) > 0) {
      throw ExprError(st.targetColumns[i], "'" + name + "' is assigned twice");
    }
    locals_.emplace(name, std::move(value));
  }

  BodyValue number(double x, bool isInt) {
    BodyValue v;
    v.kind = Kind::Number;
    v.number = x;
    v.isInt = isInt;
    return v;
  }

  BodyValue eval(const BodyNode& n) {
    switch (n.kind) {
    case BodyKind::Number:
      return number(n.number, n.isInt);
    case BodyKind::Bool: {
      BodyValue v;
      v.kind = Kind::Bool;
      v.boolean = n.boolValue;
      return v;
    }
    case BodyKind::Var:
      return variable(n);
    case BodyKind::Name:
      return name(n);
    case BodyKind::ListOf:
      return list(n);
    case BodyKind::Neg: {
      BodyValue x = eval(n.children[0]);
      return unary(n, Fn::Neg, std::move(x));
    }
    case BodyKind::Binary:
      return binary(n);
    case BodyKind::Call:
      return call(n);
    }
    throw InternalError("body: unknown node kind");
  }

  BodyValue variable(const BodyNode& n) {
    if (auto it = env_.numbers.find(n.name); it != env_.numbers.end()) {
      return number(it->second, false);
    }
    const Binding* b = env_.bindings != nullptr ? env_.bindings->find(n.name) : nullptr;
    if (b == nullptr) {
      throw ExprError(n.column, "unknown variable $" + n.name);
    }
    const Value& value = b->value;
    BodyValue v;
    if (value.isInt()) {
      return number(static_cast<double>(value.asInt()), true);
    }
    if (value.isBool()) {
      v.kind = Kind::Bool;
      v.boolean = value.asBool();
      return v;
    }
    if (value.isDType()) {
      v.kind = Kind::DType;
      v.dtype = value.asDType().name;
      return v;
    }
    if (value.isList()) {
      bool ints = std::all_of(value.asList().begin(), value.asList().end(),
                              [](const Value& e) { return e.isInt(); });
      if (ints) {
        v.kind = Kind::Ints;
        v.ints = value.toInts("$" + n.name);
        return v;
      }
    }
    throw ExprError(n.column, "$" + n.name + " is " + value.toString() +
                                  ", which a body cannot use (numbers, bools, lists of ints "
                                  "and dtypes only)");
  }

  BodyValue name(const BodyNode& n) {
    if (auto it = locals_.find(n.name); it != locals_.end()) {
      return it->second;
    }
    if (auto it = env_.inputs.find(n.name); it != env_.inputs.end()) {
      return it->second;
    }
    if (findDType(n.name) != nullptr) {
      BodyValue v;
      v.kind = Kind::DType;
      v.dtype = n.name;
      return v;
    }
    std::vector<std::string> known;
    for (const auto& entry : env_.inputs) {
      known.push_back(entry.first);
    }
    for (const auto& entry : locals_) {
      known.push_back(entry.first);
    }
    throw ExprError(n.column, "unknown name '" + n.name + "' (blocks here: " + joined(known) +
                                  "; variables start with '$')");
  }

  BodyValue list(const BodyNode& n) {
    std::vector<BodyValue> elems;
    for (const BodyNode& c : n.children) {
      elems.push_back(eval(c));
    }
    BodyValue v;
    if (elems.empty() || std::all_of(elems.begin(), elems.end(), [](const BodyValue& e) {
          return e.kind == Kind::Number && e.isInt;
        })) {
      v.kind = Kind::Ints;
      for (const BodyValue& e : elems) {
        v.ints.push_back(static_cast<std::int64_t>(e.number));
      }
      return v;
    }
    if (std::all_of(elems.begin(), elems.end(),
                    [](const BodyValue& e) { return e.kind == Kind::Block; })) {
      v.kind = Kind::Blocks;
      v.blocks = std::move(elems);
      return v;
    }
    throw ExprError(n.column, "a list holds integers or blocks, not a mix");
  }

  // ------------------------------------------------------------ arithmetic

  BodyValue binary(const BodyNode& n) {
    BodyValue a = eval(n.children[0]);
    BodyValue b = eval(n.children[1]);
    if (n.op == BodyOp::MatMul) {
      return matmul(n, a, b);
    }
    static const char* spelling[] = {"+", "-", "*", "/", "**", "@"};
    const std::string op = spelling[static_cast<int>(n.op)];
    for (const auto* side : {&a, &b}) {
      if (side->kind != Kind::Number && side->kind != Kind::Block) {
        const BodyNode& at = side == &a ? n.children[0] : n.children[1];
        throw ExprError(at.column, "'" + op + "' needs blocks or numbers, got " + describe(*side));
      }
    }
    auto apply = [&](double x, double y) {
      switch (n.op) {
      case BodyOp::Add:
        return x + y;
      case BodyOp::Sub:
        return x - y;
      case BodyOp::Mul:
        return x * y;
      case BodyOp::Div:
        return x / y;
      case BodyOp::Pow:
        return std::pow(x, y);
      case BodyOp::MatMul:
        break;
      }
      return 0.0;
    };
    if (a.kind == Kind::Number && b.kind == Kind::Number) {
      return number(apply(a.number, b.number),
                    a.isInt && b.isInt && n.op != BodyOp::Div && n.op != BodyOp::Pow);
    }
    std::string dtype = a.kind == Kind::Block ? a.type.dtype : b.type.dtype;
    if (a.kind == Kind::Block && b.kind == Kind::Block && a.type.dtype != b.type.dtype) {
      throw ExprError(n.opColumn, "'" + op + "' of a " + a.type.dtype + " block and a " +
                                      b.type.dtype + " block; cast one (cast(x, " + a.type.dtype +
                                      "))");
    }
    if (!isFloatDType(dtype)) {
      if (n.op == BodyOp::Div) {
        throw ExprError(n.opColumn, "'/' of " + dtype +
                                        " blocks: integer blocks do not divide; cast to a float "
                                        "dtype first");
      }
      for (const auto* side : {&a, &b}) {
        if (side->kind == Kind::Number && !side->isInt) {
          const BodyNode& at = side == &a ? n.children[0] : n.children[1];
          throw ExprError(at.column, "a fractional number with a " + dtype + " block");
        }
      }
    }
    return elementwise(n.opColumn, "'" + op + "'", a, b, dtype, apply);
  }

  template <class F>
  BodyValue elementwise(int column, const std::string& what, const BodyValue& a, const BodyValue& b,
                        const std::string& dtype, F&& f) {
    const Shape sa = a.kind == Kind::Block ? a.type.shape : Shape{};
    const Shape sb = b.kind == Kind::Block ? b.type.shape : Shape{};
    std::optional<Shape> out = broadcastShapes(sa, sb);
    if (!out) {
      throw ExprError(column,
                      what + " cannot broadcast " + shapeText(sa) + " with " + shapeText(sb));
    }
    BodyValue r = BodyValue::block(BlockType{*out, dtype});
    if (!numeric()) {
      return r;
    }
    r.data = std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(*out)));
    const double* pa = a.kind == Kind::Block ? a.data->data() : &a.number;
    const double* pb = b.kind == Kind::Block ? b.data->data() : &b.number;
    double* pr = r.data->data();
    const std::size_t total = r.data->size();
    // Fast paths: equal shapes, or a scalar on either side.
    const bool fullA = sa == *out;
    const bool fullB = sb == *out;
    const bool oneA = elementCount(sa) == 1;
    const bool oneB = elementCount(sb) == 1;
    if ((fullA || oneA) && (fullB || oneB)) {
      const std::size_t stepA = fullA ? 1 : 0;
      const std::size_t stepB = fullB ? 1 : 0;
      for (std::size_t i = 0; i < total; ++i) {
        pr[i] = f(pa[i * stepA], pb[i * stepB]);
      }
      return r;
    }
    forEachElement(*out, {broadcastStrides(sa, *out), broadcastStrides(sb, *out)},
                   [&](std::int64_t i, const std::vector<std::int64_t>& off) {
                     pr[i] = f(pa[off[0]], pb[off[1]]);
                   });
    return r;
  }

  BodyValue matmul(const BodyNode& n, const BodyValue& a, const BodyValue& b) {
    for (const auto* side : {&a, &b}) {
      if (side->kind != Kind::Block) {
        const BodyNode& at = side == &a ? n.children[0] : n.children[1];
        throw ExprError(at.column, "'@' needs blocks, got " + describe(*side));
      }
    }
    if (a.type.dtype != b.type.dtype) {
      throw ExprError(n.opColumn, "'@' of a " + a.type.dtype + " block and a " + b.type.dtype +
                                      " block; cast one");
    }
    if (a.type.shape.empty() || b.type.shape.empty()) {
      throw ExprError(n.opColumn, "'@' needs blocks of rank 1 or more, got " +
                                      shapeText(a.type.shape) + " and " + shapeText(b.type.shape));
    }
    // NumPy: a vector operand gains a unit dim, dropped from the result.
    Shape sa = a.type.shape;
    Shape sb = b.type.shape;
    const bool vecA = sa.size() == 1;
    const bool vecB = sb.size() == 1;
    if (vecA) {
      sa.insert(sa.begin(), 1);
    }
    if (vecB) {
      sb.push_back(1);
    }
    const std::int64_t m = sa[sa.size() - 2];
    const std::int64_t k = sa.back();
    const std::int64_t k2 = sb[sb.size() - 2];
    const std::int64_t nn = sb.back();
    if (k != k2) {
      throw ExprError(n.opColumn, "'@' of " + shapeText(a.type.shape) + " and " +
                                      shapeText(b.type.shape) + ": inner dims " +
                                      std::to_string(k) + " and " + std::to_string(k2) + " differ");
    }
    const Shape batchA(sa.begin(), sa.end() - 2);
    const Shape batchB(sb.begin(), sb.end() - 2);
    std::optional<Shape> batch = broadcastShapes(batchA, batchB);
    if (!batch) {
      throw ExprError(n.opColumn, "'@' of " + shapeText(a.type.shape) + " and " +
                                      shapeText(b.type.shape) + ": batch dims " +
                                      shapeText(batchA) + " and " + shapeText(batchB) +
                                      " do not broadcast");
    }
    Shape out = *batch;
    if (!vecA) {
      out.push_back(m);
    }
    if (!vecB) {
      out.push_back(nn);
    }
    BodyValue r = BodyValue::block(BlockType{out, a.type.dtype});
    if (!numeric()) {
      return r;
    }
    r.data = std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(out)));
    const Shape strideA = broadcastStrides(batchA, *batch);
    const Shape strideB = broadcastStrides(batchB, *batch);
    const Shape strideR = rowMajor(*batch);
    const std::int64_t matA = m * k;
    const std::int64_t matB = k * nn;
    const std::int64_t matR = m * nn;
    forEachElement(*batch, {strideA, strideB, strideR},
                   [&](std::int64_t, const std::vector<std::int64_t>& off) {
                     env_.primitives->gemm(m, nn, k, a.data->data() + off[0] * matA,
                                           b.data->data() + off[1] * matB,
                                           r.data->data() + off[2] * matR);
                   });
    return r;
  }

  // ------------------------------------------------------------ calls

  BodyValue call(const BodyNode& n) {
    const FnInfo& info = functionTable().at(n.name);
    const std::vector<const BodyNode*> args = bindArguments(n, info);
    switch (info.fn) {
    case Fn::Sum:
    case Fn::Mean:
    case Fn::Max:
    case Fn::Min:
      return reduce(n, info.fn, args);
    case Fn::Transpose:
      return transpose(n, args);
    case Fn::Reshape:
      return reshape(n, args);
    case Fn::Cast:
      return cast(n, args);
    case Fn::Concat:
      return concat(n, args);
    case Fn::Slice:
      return slice(n, args);
    case Fn::Maximum:
    case Fn::Minimum: {
      BodyValue a = eval(*args[0]);
      BodyValue b = eval(*args[1]);
      for (const auto* side : {&a, &b}) {
        if (side->kind != Kind::Number && side->kind != Kind::Block) {
          throw ExprError(n.column, n.name + "() needs blocks or numbers, got " + describe(*side));
        }
      }
      const bool isMax = info.fn == Fn::Maximum;
      auto pick = [isMax](double x, double y) {
        if (std::isnan(x) || std::isnan(y)) {
          return std::nan("");
        }
        return isMax ? std::max(x, y) : std::min(x, y);
      };
      if (a.kind == Kind::Number && b.kind == Kind::Number) {
        return number(pick(a.number, b.number), a.isInt && b.isInt);
      }
      if (a.kind == Kind::Block && b.kind == Kind::Block && a.type.dtype != b.type.dtype) {
        throw ExprError(n.column, n.name + "() of a " + a.type.dtype + " block and a " +
                                      b.type.dtype + " block; cast one");
      }
      const std::string dtype = a.kind == Kind::Block ? a.type.dtype : b.type.dtype;
      return elementwise(n.column, n.name + "()", a, b, dtype, pick);
    }
    default:
      return unary(n, info.fn, eval(*args[0]));
    }
  }

  BodyValue unary(const BodyNode& n, Fn fn, BodyValue x) {
    const std::string what = n.kind == BodyKind::Neg ? "'-'" : n.name + "()";
    const bool intsOk = fn == Fn::Neg || fn == Fn::Abs || fn == Fn::Relu;
    auto f = [fn](double v) {
      switch (fn) {
      case Fn::Exp:
        return std::exp(v);
      case Fn::Log:
        return std::log(v);
      case Fn::Sqrt:
        return std::sqrt(v);
      case Fn::Rsqrt:
        return 1.0 / std::sqrt(v);
      case Fn::Tanh:
        return std::tanh(v);
      case Fn::Erf:
        return std::erf(v);
      case Fn::Abs:
        return std::fabs(v);
      case Fn::Neg:
        return -v;
      case Fn::Sigmoid:
        return 1.0 / (1.0 + std::exp(-v));
      case Fn::Relu:
        return v < 0 ? 0.0 : v;
      case Fn::Gelu:
        return gelu(v);
      default:
        return v;
      }
    };
    if (x.kind == Kind::Number) {
      return number(f(x.number), x.isInt && intsOk);
    }
    if (x.kind != Kind::Block) {
      throw ExprError(n.column, what + " needs a block or a number, got " + describe(x));
    }
    if (!intsOk && !isFloatDType(x.type.dtype)) {
      throw ExprError(n.column,
                      what + " needs a float block, got " + toString(x.type) + " (cast it first)");
    }
    BodyValue r = BodyValue::block(x.type);
    if (numeric()) {
      r.data = std::make_shared<std::vector<double>>(x.data->size());
      std::transform(x.data->begin(), x.data->end(), r.data->begin(), f);
    }
    return r;
  }

  BodyValue blockArg(const BodyNode& call, const BodyNode* arg) {
    BodyValue v = eval(*arg);
    if (v.kind != Kind::Block) {
      throw ExprError(arg->column, call.name + "() needs a block, got " + describe(v));
    }
    return v;
  }

  std::int64_t intArg(const BodyNode& call, const BodyNode* arg, const char* what) {
    BodyValue v = eval(*arg);
    if (v.kind != Kind::Number || !v.isInt) {
      throw ExprError(arg->column,
                      call.name + "(): " + what + " must be an integer, got " + describe(v));
    }
    return static_cast<std::int64_t>(v.number);
  }

  std::vector<std::int64_t> intsArg(const BodyNode& call, const BodyNode* arg, const char* what) {
    BodyValue v = eval(*arg);
    if (v.kind == Kind::Number && v.isInt) {
      return {static_cast<std::int64_t>(v.number)};
    }
    if (v.kind != Kind::Ints) {
      throw ExprError(arg->column, call.name + "(): " + what +
                                       " must be an integer or a list of integers, got " +
                                       describe(v));
    }
    return v.ints;
  }

  std::size_t axisOf(const BodyNode& at, std::int64_t axis, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r) {
      throw ExprError(at.column, "axis " + std::to_string(axis) +
                                     " is out of range for a block of rank " +
                                     std::to_string(rank));
    }
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
  }

  BodyValue reduce(const BodyNode& n, Fn fn, const std::vector<const BodyNode*>& args) {
    BodyValue x = blockArg(n, args[0]);
    const std::size_t rank = x.type.shape.size();
    std::vector<bool> reduced(rank, args[1] == nullptr);
    if (args[1] != nullptr) {
      for (std::int64_t a : intsArg(n, args[1], "axis")) {
        const std::size_t d = axisOf(*args[1], a, rank);
        if (reduced[d]) {
          throw ExprError(args[1]->column,
                          n.name + "(): axis " + std::to_string(a) + " is named twice");
        }
        reduced[d] = true;
      }
    }
    bool keepdims = false;
    if (args[2] != nullptr) {
      BodyValue k = eval(*args[2]);
      if (k.kind != Kind::Bool) {
        throw ExprError(args[2]->column,
                        n.name + "(): keepdims must be true or false, got " + describe(k));
      }
      keepdims = k.boolean;
    }
    if (fn == Fn::Mean && !isFloatDType(x.type.dtype)) {
      throw ExprError(n.column, "mean() needs a float block, got " + toString(x.type));
    }
    Shape kept = x.type.shape; // reduced dims as 1
    Shape out;                 // the result's shape
    std::int64_t count = 1;    // elements combined into one
    for (std::size_t d = 0; d < rank; ++d) {
      if (reduced[d]) {
        count *= kept[d];
        kept[d] = 1;
        if (keepdims) {
          out.push_back(1);
        }
      } else {
        out.push_back(kept[d]);
      }
    }
    BodyValue r = BodyValue::block(BlockType{out, x.type.dtype});
    if (!numeric()) {
      return r;
    }
    const double init = fn == Fn::Max ? -INFINITY : fn == Fn::Min ? INFINITY : 0.0;
    r.data =
        std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(kept)), init);
    double* pr = r.data->data();
    const double* px = x.data->data();
    auto combine = [fn](double acc, double v) {
      if (fn == Fn::Max) {
        return std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
      }
      if (fn == Fn::Min) {
        return std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
      }
      return acc + v;
    };
    // Fast path: the reduced dims are the trailing ones (rows of a matrix).
    std::size_t lead = rank;
    while (lead > 0 && reduced[lead - 1]) {
      --lead;
    }
    if (std::none_of(reduced.begin(), reduced.begin() + static_cast<std::ptrdiff_t>(lead),
                     [](bool b) { return b; })) {
      const std::size_t rows = r.data->size();
      const auto inner = static_cast<std::size_t>(count);
      for (std::size_t j = 0; j < rows; ++j) {
        double acc = init;
        for (std::size_t i = 0; i < inner; ++i) {
          acc = combine(acc, px[j * inner + i]);
        }
        pr[j] = acc;
      }
    } else {
      forEachElement(x.type.shape, {broadcastStrides(kept, x.type.shape)},
                     [&](std::int64_t i, const std::vector<std::int64_t>& off) {
                       pr[off[0]] = combine(pr[off[0]], px[i]);
                     });
    }
    if (fn == Fn::Mean && count > 0) {
      for (double& v : *r.data) {
        v /= static_cast<double>(count);
      }
    }
    return r;
  }

  BodyValue transpose(const BodyNode& n, const std::vector<const BodyNode*>& args) {
    BodyValue x = blockArg(n, args[0]);
    const std::size_t rank = x.type.shape.size();
    std::vector<std::int64_t> perm(rank);
    if (args[1] == nullptr) {
      for (std::size_t d = 0; d < rank; ++d) {
        perm[d] = static_cast<std::int64_t>(rank - 1 - d);
      }
    } else {
      perm = intsArg(n, args[1], "perm");
      std::vector<bool> seen(rank, false);
      if (perm.size() != rank) {
        throw ExprError(args[1]->column, "transpose(): perm has " + std::to_string(perm.size()) +
                                             " entries for a block of rank " +
                                             std::to_string(rank));
      }
      for (std::int64_t& p : perm) {
        const std::size_t d = axisOf(*args[1], p, rank);
        if (seen[d]) {
          throw ExprError(args[1]->column,
                          "transpose(): perm " + shapeText(perm) + " is not a permutation");
        }
        seen[d] = true;
        p = static_cast<std::int64_t>(d);
      }
    }
    Shape out(rank);
    const Shape own = rowMajor(x.type.shape);
    Shape strides(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      out[d] = x.type.shape[static_cast<std::size_t>(perm[d])];
      strides[d] = own[static_cast<std::size_t>(perm[d])];
    }
    BodyValue r = BodyValue::block(BlockType{out, x.type.dtype});
    if (numeric()) {
      r.data = std::make_shared<std::vector<double>>(x.data->size());
      double* pr = r.data->data();
      const double* px = x.data->data();
      forEachElement(out, {strides}, [&](std::int64_t i, const std::vector<std::int64_t>& off) {
        pr[i] = px[off[0]];
      });
    }
    return r;
  }

  BodyValue reshape(const BodyNode& n, const std::vector<const BodyNode*>& args) {
    BodyValue x = blockArg(n, args[0]);
    Shape shape = intsArg(n, args[1], "shape");
    const std::int64_t total = elementCount(x.type.shape);
    std::optional<std::size_t> free;
    std::int64_t known = 1;
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == -1 && !free) {
        free = d;
      } else if (shape[d] < 0) {
        throw ExprError(args[1]->column, "reshape(): shape " + shapeText(shape) +
                                             " has a negative dim (one -1 may stand for the rest)");
      } else {
        known *= shape[d];
      }
    }
    if (free && known > 0 && total % known == 0) {
      shape[*free] = total / known;
      known = total;
    }
    if (known != total) {
      throw ExprError(args[1]->column, "reshape(): a block " + toString(x.type) + " has " +
                                           std::to_string(total) + " elements, shape " +
                                           shapeText(shape) + " has " + std::to_string(known));
    }
    x.type.shape = shape;
    return x; // row-major data is unchanged
  }

  BodyValue cast(const BodyNode& n, const std::vector<const BodyNode*>& args) {
    BodyValue x = blockArg(n, args[0]);
    BodyValue d = eval(*args[1]);
    if (d.kind != Kind::DType) {
      throw ExprError(args[1]->column,
                      "cast(): dtype must be a dtype name such as float32, got " + describe(d));
    }
    BodyValue r = BodyValue::block(BlockType{x.type.shape, d.dtype});
    if (numeric()) {
      r.data = std::make_shared<std::vector<double>>(*x.data);
      env_.primitives->round(d.dtype, *r.data);
    }
    return r;
  }

  BodyValue concat(const BodyNode& n, const std::vector<const BodyNode*>& args) {
    BodyValue list = eval(*args[0]);
    if (list.kind == Kind::Block) {
      BodyValue one;
      one.kind = Kind::Blocks;
      one.blocks.push_back(std::move(list));
      list = std::move(one);
    }
    if (list.kind != Kind::Blocks || list.blocks.empty()) {
      throw ExprError(args[0]->column,
                      "concat() needs a non-empty list of blocks, got " + describe(list));
    }
    const BlockType& first = list.blocks[0].type;
    const std::size_t axis = axisOf(*args[1], intArg(n, args[1], "axis"), first.shape.size());
    Shape out = first.shape;
    out[axis] = 0;
    for (const BodyValue& b : list.blocks) {
      Shape s = b.type.shape;
      if (s.size() != first.shape.size() || b.type.dtype != first.dtype) {
        throw ExprError(args[0]->column, "concat(): blocks " + toString(first) + " and " +
                                             toString(b.type) + " differ in rank or dtype");
      }
      out[axis] += s[axis];
      s[axis] = first.shape[axis];
      if (s != first.shape) {
        throw ExprError(args[0]->column, "concat(): blocks " + toString(first) + " and " +
                                             toString(b.type) + " differ off axis " +
                                             std::to_string(axis));
      }
    }
    BodyValue r = BodyValue::block(BlockType{out, first.dtype});
    if (!numeric()) {
      return r;
    }
    r.data = std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(out)));
    // Rows above the axis, each a run of (extent along axis x inner) per block.
    std::int64_t outer = 1;
    std::int64_t inner = 1;
    for (std::size_t d = 0; d < out.size(); ++d) {
      if (d < axis) {
        outer *= out[d];
      } else if (d > axis) {
        inner *= out[d];
      }
    }
    double* pr = r.data->data();
    for (std::int64_t o = 0; o < outer; ++o) {
      for (const BodyValue& b : list.blocks) {
        const std::int64_t run = b.type.shape[axis] * inner;
        std::copy_n(b.data->data() + o * run, run, pr);
        pr += run;
      }
    }
    return r;
  }

  BodyValue slice(const BodyNode& n, const std::vector<const BodyNode*>& args) {
    BodyValue x = blockArg(n, args[0]);
    const std::size_t rank = x.type.shape.size();
    const std::size_t axis = axisOf(*args[1], intArg(n, args[1], "axis"), rank);
    const std::int64_t extent = x.type.shape[axis];
    auto bound = [&](const BodyNode* arg, const char* what) {
      std::int64_t v = intArg(n, arg, what);
      if (v < 0) {
        v += extent;
      }
      if (v < 0 || v > extent) {
        throw ExprError(arg->column, "slice(): " + std::string(what) + " " + std::to_string(v) +
                                         " is outside 0.." + std::to_string(extent) +
                                         " along axis " + std::to_string(axis));
      }
      return v;
    };
    const std::int64_t start = bound(args[2], "start");
    const std::int64_t stop = bound(args[3], "stop");
    if (stop < start) {
      throw ExprError(args[3]->column, "slice(): stop " + std::to_string(stop) +
                                           " is before start " + std::to_string(start));
    }
    Shape out = x.type.shape;
    out[axis] = stop - start;
    BodyValue r = BodyValue::block(BlockType{out, x.type.dtype});
    if (numeric()) {
      r.data = std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(out)));
      const Shape own = rowMajor(x.type.shape);
      const double* px = x.data->data() + start * own[axis];
      double* pr = r.data->data();
      forEachElement(out, {own}, [&](std::int64_t i, const std::vector<std::int64_t>& off) {
        pr[i] = px[off[0]];
      });
    }
    return r;
  }
};

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

BodyValue BodyValue::block(BlockType type, std::shared_ptr<std::vector<double>> data) {
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
  if (env.numeric && env.primitives == nullptr) {
    throw InternalError("evaluateBody: numbers asked for without primitives");
  }
  return Evaluator(env).run(body);
}

} // namespace tapestry::expr
