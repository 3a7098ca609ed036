// The body evaluator, first half (core/expr/body_internal.hpp): statements,
// names, lists, arithmetic with broadcasting, '@', and calls (the reductions
// and data movement they dispatch to are in body_ops.cpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "core/expr/body_internal.hpp"
#include "core/expr/dtype.hpp"

namespace tapestry::expr::body_impl {

namespace {

ElementOp elementOp(BodyOp op) {
  switch (op) {
  case BodyOp::Add:
    return ElementOp::Add;
  case BodyOp::Sub:
    return ElementOp::Sub;
  case BodyOp::Mul:
    return ElementOp::Mul;
  case BodyOp::Div:
    return ElementOp::Div;
  case BodyOp::Pow:
  case BodyOp::MatMul: // '@' never gets here
    break;
  }
  return ElementOp::Pow;
}

} // namespace

std::map<std::string, BodyValue, std::less<>> Evaluator::run(const Body& body) {
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

std::string Evaluator::describe(const BodyValue& v) {
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

void Evaluator::bindTarget(const BodyStatement& st, std::size_t i, BodyValue value) {
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

BodyValue Evaluator::number(double x, bool isInt) {
  BodyValue v;
  v.kind = Kind::Number;
  v.number = x;
  v.isInt = isInt;
  return v;
}

BodyValue Evaluator::eval(const BodyNode& n) {
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
    return unary(n, UnaryFn::Neg, std::move(x));
  }
  case BodyKind::Binary:
    return binary(n);
  case BodyKind::Call:
    return call(n);
  }
  throw InternalError("body: unknown node kind");
}

BodyValue Evaluator::variable(const BodyNode& n) {
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

BodyValue Evaluator::name(const BodyNode& n) {
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

BodyValue Evaluator::list(const BodyNode& n) {
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

BodyValue Evaluator::binary(const BodyNode& n) {
  BodyValue a = eval(n.children[0]);
  BodyValue b = eval(n.children[1]);
  if (n.op == BodyOp::MatMul) {
    return matmul(n, a, b);
  }
  static const char* spelling[] = {"+", "-", "*", "/", "**", "@"};
  const std::string op = spelling[static_cast<int>(n.op)];
  return arithmetic(n.op, "'" + op + "'", n.opColumn, {&n.children[0], &n.children[1]}, a, b);
}

BodyValue Evaluator::arithmetic(BodyOp op, const std::string& what, int column,
                                std::array<const BodyNode*, 2> at, const BodyValue& a,
                                const BodyValue& b) {
  for (const auto* side : {&a, &b}) {
    if (side->kind != Kind::Number && side->kind != Kind::Block) {
      throw ExprError(at[side == &a ? 0 : 1]->column,
                      what + " needs blocks or numbers, got " + describe(*side));
    }
  }
  const ElementOp eop = elementOp(op);
  if (a.kind == Kind::Number && b.kind == Kind::Number) {
    return number(applyElement(eop, a.number, b.number),
                  a.isInt && b.isInt && op != BodyOp::Div && op != BodyOp::Pow);
  }
  std::string dtype = a.kind == Kind::Block ? a.type.dtype : b.type.dtype;
  if (a.kind == Kind::Block && b.kind == Kind::Block && a.type.dtype != b.type.dtype) {
    throw ExprError(column, what + " of a " + a.type.dtype + " block and a " + b.type.dtype +
                                " block; cast one (cast(x, " + a.type.dtype + "))");
  }
  if (!isFloatDType(dtype)) {
    if (op == BodyOp::Div) {
      throw ExprError(column, what + " of " + dtype +
                                  " blocks: integer blocks do not divide; cast to a float "
                                  "dtype first");
    }
    for (const auto* side : {&a, &b}) {
      if (side->kind == Kind::Number && !side->isInt) {
        throw ExprError(at[side == &a ? 0 : 1]->column,
                        "a fractional number with a " + dtype + " block");
      }
    }
  }
  return elementwise(column, what, a, b, dtype, eop);
}

BodyValue Evaluator::elementwise(int column, const std::string& what, const BodyValue& a,
                                 const BodyValue& b, const std::string& dtype, ElementOp op) {
  const Shape sa = a.kind == Kind::Block ? a.type.shape : Shape{};
  const Shape sb = b.kind == Kind::Block ? b.type.shape : Shape{};
  std::optional<Shape> out = broadcastShapes(sa, sb);
  if (!out) {
    throw ExprError(column, what + " cannot broadcast " + shapeText(sa) + " with " + shapeText(sb));
  }
  BodyValue r = BodyValue::block(BlockType{*out, dtype});
  if (numeric()) {
    r.data = ops().elementwise(op, a, b, *out);
  }
  return r;
}

BodyValue Evaluator::matmul(const BodyNode& n, const BodyValue& a, const BodyValue& b) {
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
                                    shapeText(b.type.shape) + ": inner dims " + std::to_string(k) +
                                    " and " + std::to_string(k2) + " differ");
  }
  const Shape batchA(sa.begin(), sa.end() - 2);
  const Shape batchB(sb.begin(), sb.end() - 2);
  std::optional<Shape> batch = broadcastShapes(batchA, batchB);
  if (!batch) {
    throw ExprError(n.opColumn, "'@' of " + shapeText(a.type.shape) + " and " +
                                    shapeText(b.type.shape) + ": batch dims " + shapeText(batchA) +
                                    " and " + shapeText(batchB) + " do not broadcast");
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
  r.data = ops().matmul(a, b, MatmulShape{batchA, batchB, *batch, m, nn, k});
  return r;
}

BodyValue Evaluator::call(const BodyNode& n) {
  const FnInfo& info = functionTable().at(n.name);
  const std::vector<const BodyNode*> args = bindArguments(n, info);
  switch (info.fn) {
  case Fn::Sum:
  case Fn::Mean:
  case Fn::Max:
  case Fn::Min:
  case Fn::Prod:
  case Fn::ArgMax:
  case Fn::ArgMin:
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
  case Fn::Pow: {
    BodyValue a = eval(*args[0]);
    BodyValue b = eval(*args[1]);
    return arithmetic(BodyOp::Pow, "pow()", n.column, {args[0], args[1]}, a, b);
  }
  case Fn::Where:
    return where(n, args);
  case Fn::Maximum:
  case Fn::Minimum: {
    BodyValue a = eval(*args[0]);
    BodyValue b = eval(*args[1]);
    for (const auto* side : {&a, &b}) {
      if (side->kind != Kind::Number && side->kind != Kind::Block) {
        throw ExprError(n.column, n.name + "() needs blocks or numbers, got " + describe(*side));
      }
    }
    const ElementOp op = info.fn == Fn::Maximum ? ElementOp::Maximum : ElementOp::Minimum;
    if (a.kind == Kind::Number && b.kind == Kind::Number) {
      return number(applyElement(op, a.number, b.number), a.isInt && b.isInt);
    }
    if (a.kind == Kind::Block && b.kind == Kind::Block && a.type.dtype != b.type.dtype) {
      throw ExprError(n.column, n.name + "() of a " + a.type.dtype + " block and a " +
                                    b.type.dtype + " block; cast one");
    }
    const std::string dtype = a.kind == Kind::Block ? a.type.dtype : b.type.dtype;
    return elementwise(n.column, n.name + "()", a, b, dtype, op);
  }
  case Fn::Element:
    return elementCall(n, info.element, args);
  case Fn::Unary:
    break;
  }
  return unary(n, info.unary, eval(*args[0]));
}

BodyValue Evaluator::elementCall(const BodyNode& n, ElementOp op,
                                 const std::vector<const BodyNode*>& args) {
  const bool logical = op == ElementOp::And || op == ElementOp::Or || op == ElementOp::Xor;
  const bool test = logical || (op != ElementOp::Mod && op != ElementOp::Fmod);
  const std::string what = n.name + "()";
  std::array<BodyValue, 2> v = {eval(*args[0]), eval(*args[1])};
  for (std::size_t i = 0; i < 2; ++i) {
    if (v[i].kind == Kind::Bool) { // true/false as the numbers 1/0
      v[i] = number(v[i].boolean ? 1.0 : 0.0, true);
    }
    if (v[i].kind != Kind::Number && v[i].kind != Kind::Block) {
      throw ExprError(args[i]->column, what + " needs blocks or numbers, got " + describe(v[i]));
    }
    if (logical && v[i].kind == Kind::Block && v[i].type.dtype != "bool") {
      throw ExprError(args[i]->column,
                      what + " needs bool blocks, got " + toString(v[i].type) + " (cast it first)");
    }
  }
  const BodyValue& a = v[0];
  const BodyValue& b = v[1];
  if (a.kind == Kind::Number && b.kind == Kind::Number) {
    const double r = applyElement(op, a.number, b.number);
    if (!test) {
      return number(r, a.isInt && b.isInt);
    }
    BodyValue t;
    t.kind = Kind::Bool;
    t.boolean = r != 0;
    return t;
  }
  if (a.kind == Kind::Block && b.kind == Kind::Block && a.type.dtype != b.type.dtype) {
    throw ExprError(n.column, what + " of a " + a.type.dtype + " block and a " + b.type.dtype +
                                  " block; cast one (cast(x, " + a.type.dtype + "))");
  }
  const std::string dtype = a.kind == Kind::Block ? a.type.dtype : b.type.dtype;
  if (!isFloatDType(dtype)) {
    for (std::size_t i = 0; i < 2; ++i) {
      if (v[i].kind == Kind::Number && !v[i].isInt) {
        throw ExprError(args[i]->column, "a fractional number with a " + dtype + " block");
      }
    }
  }
  if (!test && dtype == "bool") {
    throw ExprError(n.column, what + " of bool blocks; cast them to a number dtype first");
  }
  return elementwise(n.column, what, a, b, test ? "bool" : dtype, op);
}

BodyValue Evaluator::where(const BodyNode& n, const std::vector<const BodyNode*>& args) {
  BodyValue c = eval(*args[0]);
  BodyValue a = eval(*args[1]);
  BodyValue b = eval(*args[2]);
  if (c.kind == Kind::Block ? c.type.dtype != "bool" : c.kind != Kind::Bool) {
    throw ExprError(args[0]->column,
                    "where(): condition must be a bool block or true/false, got " + describe(c));
  }
  for (const auto* side : {&a, &b}) {
    if (side->kind != Kind::Number && side->kind != Kind::Block) {
      throw ExprError(args[side == &a ? 1 : 2]->column,
                      "where(): a and b must be blocks or numbers, got " + describe(*side));
    }
  }
  if (a.kind == Kind::Block && b.kind == Kind::Block && a.type.dtype != b.type.dtype) {
    throw ExprError(n.column, "where() of a " + a.type.dtype + " block and a " + b.type.dtype +
                                  " block; cast one (cast(x, " + a.type.dtype + "))");
  }
  if (a.kind == Kind::Number && b.kind == Kind::Number) {
    if (c.kind == Kind::Bool) {
      return c.boolean ? a : b;
    }
    throw ExprError(n.column, "where(): a or b must be a block, to give the result its dtype");
  }
  const std::string dtype = a.kind == Kind::Block ? a.type.dtype : b.type.dtype;
  for (const auto* side : {&a, &b}) {
    if (side->kind == Kind::Number && !side->isInt && !isFloatDType(dtype)) {
      throw ExprError(args[side == &a ? 1 : 2]->column,
                      "a fractional number with a " + dtype + " block");
    }
  }
  auto shapeOf = [](const BodyValue& v) { return v.kind == Kind::Block ? v.type.shape : Shape{}; };
  std::optional<Shape> ab = broadcastShapes(shapeOf(a), shapeOf(b));
  std::optional<Shape> out = ab ? broadcastShapes(shapeOf(c), *ab) : std::nullopt;
  if (!out) {
    throw ExprError(n.column, "where() cannot broadcast " + shapeText(shapeOf(c)) + ", " +
                                  shapeText(shapeOf(a)) + " and " + shapeText(shapeOf(b)));
  }
  BodyValue r = BodyValue::block(BlockType{*out, dtype});
  if (!numeric()) {
    return r;
  }
  r.data = ops().where(c, a, b, *out);
  return r;
}

BodyValue Evaluator::unary(const BodyNode& n, UnaryFn f, BodyValue x) {
  const std::string what = n.kind == BodyKind::Neg ? "'-'" : n.name + "()";
  const bool intsOk =
      f == UnaryFn::Neg || f == UnaryFn::Abs || f == UnaryFn::Relu || f == UnaryFn::Sign;
  const bool test = f == UnaryFn::IsNan || f == UnaryFn::IsInf || f == UnaryFn::Not;
  if (f == UnaryFn::Not) {
    if (x.kind == Kind::Bool) {
      x.boolean = !x.boolean;
      return x;
    }
    if (x.kind != Kind::Block || x.type.dtype != "bool") {
      throw ExprError(n.column, what + " needs a bool block or true/false, got " + describe(x));
    }
  } else if (x.kind == Kind::Number) {
    if (test) {
      BodyValue t;
      t.kind = Kind::Bool;
      t.boolean = applyUnary(f, x.number) != 0;
      return t;
    }
    return number(applyUnary(f, x.number), x.isInt && intsOk);
  }
  if (x.kind != Kind::Block) {
    throw ExprError(n.column, what + " needs a block or a number, got " + describe(x));
  }
  if (f != UnaryFn::Not && !intsOk && !isFloatDType(x.type.dtype)) {
    throw ExprError(n.column,
                    what + " needs a float block, got " + toString(x.type) + " (cast it first)");
  }
  BodyValue r = BodyValue::block(test ? BlockType{x.type.shape, "bool"} : x.type);
  if (numeric()) {
    r.data = ops().unary(f, x);
  }
  return r;
}

BodyValue Evaluator::blockArg(const BodyNode& call, const BodyNode* arg) {
  BodyValue v = eval(*arg);
  if (v.kind != Kind::Block) {
    throw ExprError(arg->column, call.name + "() needs a block, got " + describe(v));
  }
  return v;
}

std::int64_t Evaluator::intArg(const BodyNode& call, const BodyNode* arg, const char* what) {
  BodyValue v = eval(*arg);
  if (v.kind != Kind::Number || !v.isInt) {
    throw ExprError(arg->column,
                    call.name + "(): " + what + " must be an integer, got " + describe(v));
  }
  return static_cast<std::int64_t>(v.number);
}

std::vector<std::int64_t> Evaluator::intsArg(const BodyNode& call, const BodyNode* arg,
                                             const char* what) {
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

std::size_t Evaluator::axisOf(const BodyNode& at, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw ExprError(at.column, "axis " + std::to_string(axis) +
                                   " is out of range for a block of rank " + std::to_string(rank));
  }
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

} // namespace tapestry::expr::body_impl
