// Evaluates expression ASTs against bindings. Integer math is floor-based (as
// Python) and overflow-checked; `@` evaluates to unit affine forms so IPF rows
// come out as Affine values. Every error points at the node that caused it.
//
// A comprehension `[body for $x in list]` evaluates body once per element of
// list with $x bound to it (shadowing any outer $x); `all_equal(list)` says
// whether all elements are equal (true for an empty list).
//
// Shape helpers for broadcasting and reshape templates:
//   broadcast(a, b)            NumPy broadcast of two shapes.
//   broadcast_rows(@, shape)   rows reading a tensor of `shape` broadcast against
//                              the trailing index dims; size-1 dims read element 0.
//   refine(a, b)               coarsest common refinement of two shapes, [] if none.
//   refine_rows(@, r, shape)   rows mapping an index over refinement r onto `shape`:
//                              each dim is the row-major combination of its r dims.
#include <algorithm>
#include <set>

#include "core/expr/ast.hpp"
#include "core/expr/eval_internal.hpp"
#include "core/expr/expr.hpp"
#include "core/zspace/checked.hpp"

namespace tapestry::expr {

namespace {

// Longest list ones()/zeros()/range() builds; more is surely a mistake.
constexpr std::int64_t kMaxListLength = 1 << 24;

std::string typed(const Value& v) {
  return std::string(v.typeName()) + " " + v.toString();
}

// Runs a checked.hpp operation; its overflow Error becomes an ExprError at `column`.
template <class F> std::int64_t atColumn(int column, F f) {
  try {
    return f();
  } catch (const ExprError&) {
    throw;
  } catch (const Error& e) {
    throw ExprError(column, e.message());
  }
}

std::int64_t floorDiv(std::int64_t a, std::int64_t b, int column) {
  if (b == 0) {
    throw ExprError(column, "division by zero: " + std::to_string(a) + " / 0");
  }
  if (b == -1) {
    return atColumn(column, [&] { return checkedNeg(a); });
  }
  std::int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) {
    --q;
  }
  return q;
}

std::int64_t floorMod(std::int64_t a, std::int64_t b, int column) {
  if (b == 0) {
    throw ExprError(column, "modulo by zero: " + std::to_string(a) + " % 0");
  }
  if (b == -1) {
    return 0;
  }
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    r += b;
  }
  return r;
}

std::int64_t power(std::int64_t a, std::int64_t b, int column) {
  if (b < 0) {
    throw ExprError(column, "negative exponent: " + std::to_string(a) + " ** " + std::to_string(b));
  }
  if (a == 0 || a == 1) {
    return b == 0 ? 1 : a;
  }
  if (a == -1) {
    return b % 2 == 0 ? 1 : -1;
  }
  // |a| >= 2 overflows within 63 steps, so the loop is short.
  std::int64_t r = 1;
  for (std::int64_t i = 0; i < b; ++i) {
    r = atColumn(column, [&] { return checkedMul(r, a); });
  }
  return r;
}

const char* verb(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "add";
  case BinaryOp::Sub:
    return "subtract";
  case BinaryOp::Mul:
    return "multiply";
  case BinaryOp::Div:
    return "divide";
  case BinaryOp::Mod:
    return "take the remainder of";
  case BinaryOp::Pow:
    return "exponentiate";
  default:
    return "compare";
  }
}

Affine toAffine(const Value& v, std::size_t rank) {
  if (v.isAffine()) {
    return v.asAffine();
  }
  Affine a;
  a.coeffs.assign(rank, 0);
  a.constant = v.asInt();
  return a;
}

} // namespace

Value ExprEvaluator::arith(BinaryOp op, const Value& a, const Value& b,
                           const ExprNode& node) const {
  int col = node.opColumn;
  if (a.isInt() && b.isInt()) {
    std::int64_t x = a.asInt();
    std::int64_t y = b.asInt();
    switch (op) {
    case BinaryOp::Add:
      return atColumn(col, [&] { return checkedAdd(x, y); });
    case BinaryOp::Sub:
      return atColumn(col, [&] { return checkedSub(x, y); });
    case BinaryOp::Mul:
      return atColumn(col, [&] { return checkedMul(x, y); });
    case BinaryOp::Div:
      return floorDiv(x, y, col);
    case BinaryOp::Mod:
      return floorMod(x, y, col);
    case BinaryOp::Pow:
      return power(x, y, col);
    default:
      break;
    }
  }
  if (op == BinaryOp::Add && a.isList() && b.isList()) {
    List out = a.asList();
    out.insert(out.end(), b.asList().begin(), b.asList().end());
    return out;
  }
  bool affineA = a.isAffine() || a.isInt();
  bool affineB = b.isAffine() || b.isInt();
  if (affineA && affineB) { // at least one is Affine
    if (op == BinaryOp::Mul && a.isAffine() && b.isAffine()) {
      throw ExprError(col, "not affine in @: " + textOf(node));
    }
    if (op == BinaryOp::Div || op == BinaryOp::Mod || op == BinaryOp::Pow) {
      throw ExprError(col, "not affine in @: " + textOf(node));
    }
    std::size_t rank = a.isAffine() ? a.asAffine().coeffs.size() : b.asAffine().coeffs.size();
    if (op == BinaryOp::Mul) {
      const Affine& f = a.isAffine() ? a.asAffine() : b.asAffine();
      std::int64_t k = a.isAffine() ? b.asInt() : a.asInt();
      Affine out;
      out.coeffs.reserve(rank);
      for (std::int64_t c : f.coeffs) {
        out.coeffs.push_back(atColumn(col, [&] { return checkedMul(c, k); }));
      }
      out.constant = atColumn(col, [&] { return checkedMul(f.constant, k); });
      return out;
    }
    Affine x = toAffine(a, rank);
    Affine y = toAffine(b, rank);
    bool sub = op == BinaryOp::Sub;
    for (std::size_t k = 0; k < rank; ++k) {
      x.coeffs[k] = atColumn(col, [&] {
        return sub ? checkedSub(x.coeffs[k], y.coeffs[k]) : checkedAdd(x.coeffs[k], y.coeffs[k]);
      });
    }
    x.constant = atColumn(col, [&] {
      return sub ? checkedSub(x.constant, y.constant) : checkedAdd(x.constant, y.constant);
    });
    return x;
  }
  throw ExprError(col,
                  std::string("cannot ") + verb(op) + " " + a.typeName() + " and " + b.typeName());
}

std::string ExprEvaluator::textOf(const ExprNode& n) const {
  std::size_t start = static_cast<std::size_t>(std::max(n.column - 1, 0));
  if (start >= source_.size()) {
    return {};
  }
  return std::string(source_.substr(start, static_cast<std::size_t>(n.length)));
}

Value ExprEvaluator::eval(const ExprNode& n) const {
  switch (n.kind) {
  case ExprKind::Int:
    return n.intValue;
  case ExprKind::Bool:
    return n.boolValue;
  case ExprKind::DType:
    return DType{n.name};
  case ExprKind::Var: {
    const Value* v = lookup(n.name);
    if (v == nullptr) {
      throw ExprError(n.column, "unbound variable $" + n.name);
    }
    return *v;
  }
  case ExprKind::IndexPoint:
    return indexPoint(n);
  case ExprKind::List:
    return list(n);
  case ExprKind::Neg: {
    Value v = eval(n.children[0]);
    if (v.isInt()) {
      return atColumn(n.column, [&] { return checkedNeg(v.asInt()); });
    }
    if (v.isAffine()) {
      return arith(BinaryOp::Mul, v, Value(std::int64_t{-1}), n);
    }
    throw ExprError(n.column, std::string("cannot negate ") + typed(v));
  }
  case ExprKind::Not:
    return !boolean(n.children[0], "'not'");
  case ExprKind::And:
    return boolean(n.children[0], "'and'") && boolean(n.children[1], "'and'");
  case ExprKind::Or:
    return boolean(n.children[0], "'or'") || boolean(n.children[1], "'or'");
  case ExprKind::Binary:
    return binary(n);
  case ExprKind::Select:
    return select(n);
  case ExprKind::Slice:
    return slice(n);
  case ExprKind::Call:
    return call(n);
  case ExprKind::Comprehension:
    return comprehension(n);
  }
  throw InternalError("expr evaluator: unknown node kind");
}

const Value* ExprEvaluator::lookup(const std::string& name) const {
  for (auto it = locals_.rbegin(); it != locals_.rend(); ++it) {
    if (it->first == name) {
      return &it->second;
    }
  }
  const Binding* b = ctx_.bindings ? ctx_.bindings->find(name) : nullptr;
  return b ? &b->value : nullptr;
}

// [body for $x in source]: body evaluated with $x bound to each element in turn.
Value ExprEvaluator::comprehension(const ExprNode& n) const {
  List source = listOf(n.children[1], "the source of a comprehension ('in')");
  // Pops the variable however the body ends (an error unwinds through here).
  struct Scope {
    std::vector<std::pair<std::string, Value>>& locals;
    ~Scope() { locals.pop_back(); }
  };
  locals_.emplace_back(n.name, Value());
  Scope scope{locals_};
  List out;
  out.reserve(source.size());
  for (Value& element : source) {
    locals_.back().second = std::move(element);
    out.push_back(eval(n.children[0]));
  }
  return out;
}

bool ExprEvaluator::boolean(const ExprNode& n, const char* what) const {
  Value v = eval(n);
  if (!v.isBool()) {
    throw ExprError(n.column, std::string(what) + " needs a bool, got " + typed(v));
  }
  return v.asBool();
}

std::int64_t ExprEvaluator::integer(const ExprNode& n, const std::string& what) const {
  Value v = eval(n);
  if (!v.isInt()) {
    throw ExprError(n.column, what + " must be an int, got " + typed(v));
  }
  return v.asInt();
}

std::vector<std::int64_t> ExprEvaluator::ints(const ExprNode& n, const std::string& what) const {
  Value v = eval(n);
  if (v.isList()) {
    std::vector<std::int64_t> out;
    out.reserve(v.asList().size());
    for (const Value& e : v.asList()) {
      if (!e.isInt()) {
        break;
      }
      out.push_back(e.asInt());
    }
    if (out.size() == v.asList().size()) {
      return out;
    }
  }
  throw ExprError(n.column, what + " must be a list of ints, got " + typed(v));
}

List ExprEvaluator::listOf(const ExprNode& n, const std::string& what) const {
  Value v = eval(n);
  if (!v.isList()) {
    throw ExprError(n.column, what + " must be a list, got " + typed(v));
  }
  return v.asList();
}

Value ExprEvaluator::indexPoint(const ExprNode& n) const {
  if (!ctx_.indexRank) {
    throw ExprError(n.column, "@ is only allowed in IPF rows");
  }
  auto rank = static_cast<std::size_t>(*ctx_.indexRank);
  List out;
  out.reserve(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    Affine a;
    a.coeffs.assign(rank, 0);
    a.coeffs[k] = 1;
    out.emplace_back(std::move(a));
  }
  return out;
}

Value ExprEvaluator::list(const ExprNode& n) const {
  List out;
  out.reserve(n.children.size());
  std::optional<std::size_t> fillAt;
  Value fill;
  int fillColumn = 0;
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    const ExprNode& child = n.children[i];
    Value v = eval(child);
    if (!n.expanded[i]) {
      out.push_back(std::move(v));
    } else if (v.isList()) {
      out.insert(out.end(), v.asList().begin(), v.asList().end());
    } else {
      if (fillAt) {
        throw ExprError(child.column, "at most one scalar fill (x...) per list");
      }
      fillAt = out.size();
      fill = std::move(v);
      fillColumn = child.column;
    }
  }
  if (fillAt) {
    if (!ctx_.fillLength) {
      throw ExprError(fillColumn, "scalar fill needs a context length (a tensor rank)");
    }
    std::int64_t count = *ctx_.fillLength - static_cast<std::int64_t>(out.size());
    if (count < 0) {
      throw ExprError(fillColumn, "list already has " + std::to_string(out.size()) +
                                      " elements, more than the context length " +
                                      std::to_string(*ctx_.fillLength));
    }
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(*fillAt), static_cast<std::size_t>(count),
               fill);
  }
  return out;
}

Value ExprEvaluator::binary(const ExprNode& n) const {
  Value a = eval(n.children[0]);
  Value b = eval(n.children[1]);
  switch (n.op) {
  case BinaryOp::Eq:
    return a == b;
  case BinaryOp::Ne:
    return a != b;
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: {
    if (!a.isInt() || !b.isInt()) {
      throw ExprError(n.opColumn, std::string("cannot compare ") + a.typeName() + " and " +
                                      b.typeName() + " with '" + binaryOpSpelling(n.op) + "'");
    }
    std::int64_t x = a.asInt();
    std::int64_t y = b.asInt();
    return n.op == BinaryOp::Lt   ? x < y
           : n.op == BinaryOp::Le ? x <= y
           : n.op == BinaryOp::Gt ? x > y
                                  : x >= y;
  }
  default:
    return arith(n.op, a, b, n);
  }
}

namespace {

Value element(const List& l, std::int64_t i, const ExprNode& at) {
  auto size = static_cast<std::int64_t>(l.size());
  std::int64_t k = i < 0 ? i + size : i;
  if (k < 0 || k >= size) {
    throw ExprError(at.column, "index " + std::to_string(i) + " is out of range for " +
                                   Value(l).toString() + " (length " + std::to_string(size) + ")");
  }
  return l[static_cast<std::size_t>(k)];
}

} // namespace

Value ExprEvaluator::select(const ExprNode& n) const {
  const ExprNode& baseNode = n.children[0];
  const ExprNode& indexNode = n.children[1];
  Value base = eval(baseNode);
  if (!base.isList()) {
    throw ExprError(n.opColumn, "cannot index " + typed(base) + ": only lists can be indexed");
  }
  Value index = eval(indexNode);
  if (index.isInt()) {
    return element(base.asList(), index.asInt(), indexNode);
  }
  if (index.isList()) {
    List out;
    out.reserve(index.asList().size());
    for (const Value& i : index.asList()) {
      if (!i.isInt()) {
        throw ExprError(indexNode.column,
                        "a gather index must be a list of ints, got " + index.toString());
      }
      out.push_back(element(base.asList(), i.asInt(), indexNode));
    }
    return out;
  }
  throw ExprError(indexNode.column,
                  "an index must be an int or a list of ints, got " + typed(index));
}

Value ExprEvaluator::slice(const ExprNode& n) const {
  Value base = eval(n.children[0]);
  if (!base.isList()) {
    throw ExprError(n.opColumn, "cannot slice " + typed(base) + ": only lists can be sliced");
  }
  const List& l = base.asList();
  auto size = static_cast<std::int64_t>(l.size());
  auto bound = [&](const ExprNode& e, const char* which) {
    std::int64_t v = integer(e, std::string("a slice ") + which);
    if (v < 0) {
      v = std::max<std::int64_t>(v + size, 0);
    }
    return std::min(v, size);
  };
  std::size_t next = 1;
  std::int64_t lo = n.hasLo ? bound(n.children[next++], "start") : 0;
  std::int64_t hi = n.hasHi ? bound(n.children[next++], "end") : size;
  if (lo >= hi) {
    return List{};
  }
  return List(l.begin() + lo, l.begin() + hi);
}

namespace {

std::string intsToString(const std::vector<std::int64_t>& xs) {
  return Value::ints(xs).toString();
}

} // namespace

std::optional<std::vector<std::int64_t>> commonRefinement(const std::vector<std::int64_t>& a,
                                                          const std::vector<std::int64_t>& b) {
  auto product = [](const std::vector<std::int64_t>& s) {
    std::int64_t p = 1;
    for (std::int64_t d : s) {
      p = checkedMul(p, d);
    }
    return p;
  };
  bool anyZero =
      std::find(a.begin(), a.end(), 0) != a.end() || std::find(b.begin(), b.end(), 0) != b.end();
  if (anyZero || std::any_of(a.begin(), a.end(), [](std::int64_t d) { return d < 0; }) ||
      std::any_of(b.begin(), b.end(), [](std::int64_t d) { return d < 0; })) {
    if (a == b) {
      return a;
    }
    return std::nullopt;
  }
  if (product(a) != product(b)) {
    return std::nullopt;
  }
  // The refinement's boundaries are the union of both shapes' prefix products;
  // it exists iff each boundary divides the next one.
  std::set<std::int64_t> cuts;
  for (const auto* s : {&a, &b}) {
    std::int64_t p = 1;
    for (std::int64_t d : *s) {
      p *= d; // cannot overflow: bounded by the checked total
      cuts.insert(p);
    }
  }
  std::vector<std::int64_t> out;
  std::int64_t prev = 1;
  for (std::int64_t c : cuts) {
    if (c % prev != 0) {
      return std::nullopt;
    }
    if (c != prev) {
      out.push_back(c / prev);
    }
    prev = c;
  }
  return out;
}

// One case per built-in function (len, sum, prod, min, max, broadcast, ...):
// longer than 120 lines because the language's function table is here, each
// case checking its own arguments where its error message is written.
Value ExprEvaluator::call(const ExprNode& n) const {
  const auto& args = n.children;
  std::string fn = n.name + "()";
  switch (n.function) {
  case Function::Len: {
    Value v = eval(args[0]);
    if (!v.isList()) {
      throw ExprError(args[0].column, "len() needs a list, got " + typed(v));
    }
    return static_cast<std::int64_t>(v.asList().size());
  }
  case Function::Sum: {
    List l = listOf(args[0], "the argument of sum()");
    Value acc(std::int64_t{0});
    for (const Value& v : l) {
      if (!v.isInt() && !v.isAffine()) {
        throw ExprError(args[0].column, "sum() needs a list of ints, got " + Value(l).toString());
      }
      acc = arith(BinaryOp::Add, acc, v, n);
    }
    return acc;
  }
  case Function::Prod: {
    std::vector<std::int64_t> xs = ints(args[0], "the argument of prod()");
    std::int64_t p = 1;
    for (std::int64_t x : xs) {
      p = atColumn(n.column, [&] { return checkedMul(p, x); });
    }
    return p;
  }
  case Function::Min:
  case Function::Max: {
    std::vector<std::int64_t> xs;
    if (args.size() == 1) {
      xs = ints(args[0], "the argument of " + fn);
      if (xs.empty()) {
        throw ExprError(args[0].column, fn + " of an empty list");
      }
    } else {
      for (const ExprNode& a : args) {
        xs.push_back(integer(a, "an argument of " + fn));
      }
    }
    return n.function == Function::Min ? *std::min_element(xs.begin(), xs.end())
                                       : *std::max_element(xs.begin(), xs.end());
  }
  case Function::Ones:
  case Function::Zeros:
  case Function::Range: {
    std::int64_t count = integer(args[0], "the argument of " + fn);
    if (count < 0 || count > kMaxListLength) {
      throw ExprError(args[0].column, fn + " needs a length from 0 to " +
                                          std::to_string(kMaxListLength) + ", got " +
                                          std::to_string(count));
    }
    List out;
    out.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      out.emplace_back(n.function == Function::Ones ? 1 : n.function == Function::Zeros ? 0 : i);
    }
    return out;
  }
  case Function::CeilDiv: {
    std::int64_t a = integer(args[0], "the first argument of ceil_div()");
    std::int64_t b = integer(args[1], "the second argument of ceil_div()");
    if (b == 0) {
      throw ExprError(args[1].column, "division by zero: ceil_div(" + std::to_string(a) + ", 0)");
    }
    std::int64_t q = floorDiv(a, b, n.column);
    return floorMod(a, b, n.column) == 0 ? q : q + 1;
  }
  case Function::If:
    return boolean(args[0], "the condition of if()") ? eval(args[1]) : eval(args[2]);
  case Function::AllEqual: {
    List l = listOf(args[0], "the argument of all_equal()");
    return std::all_of(l.begin(), l.end(), [&](const Value& v) { return v == l.front(); });
  }
  case Function::Broadcast: {
    std::vector<std::int64_t> a = ints(args[0], "the first argument of broadcast()");
    std::vector<std::int64_t> b = ints(args[1], "the second argument of broadcast()");
    std::size_t rank = std::max(a.size(), b.size());
    std::vector<std::int64_t> out(rank);
    for (std::size_t i = 0; i < rank; ++i) {
      std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
      std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
      if (x != y && x != 1 && y != 1) {
        throw ExprError(n.column,
                        "cannot broadcast " + intsToString(a) + " with " + intsToString(b));
      }
      out[i] = x == 1 ? y : x;
    }
    return Value::ints(out);
  }
  case Function::BroadcastRows: {
    List at = listOf(args[0], "the first argument of broadcast_rows()");
    std::vector<std::int64_t> shape = ints(args[1], "the second argument of broadcast_rows()");
    if (shape.size() > at.size()) {
      throw ExprError(n.column, "broadcast_rows(): shape " + intsToString(shape) + " has " +
                                    std::to_string(shape.size()) +
                                    " dims, more than the index point's " +
                                    std::to_string(at.size()));
    }
    std::size_t offset = at.size() - shape.size();
    List out;
    out.reserve(shape.size());
    for (std::size_t j = 0; j < shape.size(); ++j) {
      out.push_back(shape[j] != 1 ? at[offset + j] : Value(std::int64_t{0}));
    }
    return out;
  }
  case Function::Refine: {
    std::vector<std::int64_t> a = ints(args[0], "the first argument of refine()");
    std::vector<std::int64_t> b = ints(args[1], "the second argument of refine()");
    std::optional<std::vector<std::int64_t>> r;
    try {
      r = commonRefinement(a, b);
    } catch (const Error& e) {
      throw ExprError(n.column, e.message());
    }
    return Value::ints(r ? *r : std::vector<std::int64_t>{});
  }
  case Function::RefineRows: {
    List at = listOf(args[0], "the first argument of refine_rows()");
    std::vector<std::int64_t> r =
        ints(args[1], "the refinement (second argument of refine_rows())");
    std::vector<std::int64_t> shape = ints(args[2], "the shape (third argument of refine_rows())");
    if (at.size() != r.size()) {
      throw ExprError(n.column, "refine_rows(): the index point has " + std::to_string(at.size()) +
                                    " dims but the refinement " + intsToString(r) + " has " +
                                    std::to_string(r.size()));
    }
    auto notRefining = [&] {
      return ExprError(n.column, "refine_rows(): " + intsToString(r) + " does not refine " +
                                     intsToString(shape));
    };
    List out;
    out.reserve(shape.size());
    std::size_t k = 0;
    for (std::int64_t s : shape) {
      std::size_t first = k;
      std::int64_t prod = 1;
      while (k < r.size() && prod < s) {
        if (r[k] <= 0) {
          throw notRefining();
        }
        prod = atColumn(n.column, [&] { return checkedMul(prod, r[k]); });
        ++k;
      }
      if (prod != s) {
        throw notRefining();
      }
      // Row-major: dim `first` has stride r[first+1]·…·r[k-1].
      Value row(std::int64_t{0});
      std::int64_t stride = prod;
      for (std::size_t d = first; d < k; ++d) {
        stride /= r[d];
        row = arith(BinaryOp::Add, row, arith(BinaryOp::Mul, Value(stride), at[d], n), n);
      }
      out.push_back(std::move(row));
    }
    for (; k < r.size(); ++k) {
      if (r[k] != 1) {
        throw notRefining();
      }
    }
    return out;
  }
  }
  throw InternalError("expr evaluator: unknown function");
}

Value evaluate(const Expr& e, const EvalContext& ctx) {
  return ExprEvaluator(e.source(), ctx).eval(e.root());
}

} // namespace tapestry::expr
