// Shared between the body parser (parser.cpp, which owns the ANTLR types), the
// function table (body.cpp), the evaluator, whose member functions are split
// by job: statements, names, arithmetic and calls (body_eval.cpp); reductions
// and data movement (body_ops.cpp), and the host float64 BlockOps
// (body_host.cpp). The evaluator checks shapes and arguments and leaves every
// number of a block to BlockOps.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/expr/body.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::expr {

// The checks a body gets right after parsing: known functions, their keyword
// and positional arguments, at least one target per statement, no target named
// twice in one statement. ExprError at the column of the problem.
void checkBodyNames(const std::vector<BodyStatement>& statements);

namespace body_impl {

using Kind = BodyValue::Kind;
using Shape = std::vector<std::int64_t>;

// ---------------------------------------------------------------- functions

// What a called function is: one of the unary math functions (FnInfo::unary
// says which), a reduction, or one of the rest.
enum class Fn : std::uint8_t {
  Unary,
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  ArgMax,
  ArgMin,
  Transpose,
  Reshape,
  Cast,
  Concat,
  Slice,
  Maximum,
  Minimum,
  Pow,
  Where,
  Element, // a broadcasting binary op (FnInfo::element): comparisons, logic, mod
};

struct FnInfo {
  Fn fn;
  std::vector<std::string> args;      // in positional order
  std::size_t required;               // the first `required` must be given
  UnaryFn unary = UnaryFn::Exp;       // which, for Fn::Unary
  ElementOp element = ElementOp::Add; // which, for Fn::Element
};

// Every function a body may call, by name.
const std::map<std::string, FnInfo, std::less<>>& functionTable();
// "a, b, c".
std::string joined(const std::vector<std::string>& items);
// The call's arguments by parameter position (nullptr: not given); ExprError
// for an unknown keyword, too many arguments, one given twice or one missing.
std::vector<const BodyNode*> bindArguments(const BodyNode& call, const FnInfo& info);

// ---------------------------------------------------------------- helpers

inline bool isFloatDType(std::string_view d) {
  return d == "float32" || d == "float64" || d == "float16" || d == "bfloat16";
}

inline std::int64_t elementCount(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t e : s) {
    n *= e;
  }
  return n;
}

inline Shape rowMajor(const Shape& s) {
  Shape strides(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) {
    strides[d - 1] = strides[d] * s[d];
  }
  return strides;
}

// Strides that read an operand of shape `s` broadcast to `out` (0 on broadcast dims).
inline Shape broadcastStrides(const Shape& s, const Shape& out) {
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

inline std::string shapeText(const Shape& s) {
  return ZPoint(s).toString();
}

// ---------------------------------------------------------------- evaluator

class Evaluator {
public:
  explicit Evaluator(const BodyEnvironment& env) : env_(env) {}

  std::map<std::string, BodyValue, std::less<>> run(const Body& body);

private:
  const BodyEnvironment& env_;
  std::map<std::string, BodyValue, std::less<>> locals_;

  bool numeric() const { return env_.numeric; }
  BlockOps& ops() const { return *env_.ops; }

  // statements, names and arithmetic (body_eval.cpp)
  static std::string describe(const BodyValue& v);
  void bindTarget(const BodyStatement& st, std::size_t i, BodyValue value);
  BodyValue number(double x, bool isInt);
  BodyValue eval(const BodyNode& n);
  BodyValue variable(const BodyNode& n);
  BodyValue name(const BodyNode& n);
  BodyValue list(const BodyNode& n);
  BodyValue binary(const BodyNode& n);
  // + - * / ** and pow(): blocks or numbers, NumPy broadcasting; `at` are the
  // operands' nodes (for the columns of errors about them).
  BodyValue arithmetic(BodyOp op, const std::string& what, int column,
                       std::array<const BodyNode*, 2> at, const BodyValue& a, const BodyValue& b);
  // where(condition, a, b): a bool block (or bool) picks a or b, all three broadcast.
  BodyValue where(const BodyNode& n, const std::vector<const BodyNode*>& args);
  BodyValue elementwise(int column, const std::string& what, const BodyValue& a, const BodyValue& b,
                        const std::string& dtype, ElementOp op);
  BodyValue matmul(const BodyNode& n, const BodyValue& a, const BodyValue& b);
  BodyValue call(const BodyNode& n);
  BodyValue unary(const BodyNode& n, UnaryFn fn, BodyValue x);
  // comparisons, logical ops, mod and fmod (Fn::Element).
  BodyValue elementCall(const BodyNode& n, ElementOp op, const std::vector<const BodyNode*>& args);
  BodyValue blockArg(const BodyNode& call, const BodyNode* arg);
  std::int64_t intArg(const BodyNode& call, const BodyNode* arg, const char* what);
  std::vector<std::int64_t> intsArg(const BodyNode& call, const BodyNode* arg, const char* what);
  std::size_t axisOf(const BodyNode& at, std::int64_t axis, std::size_t rank);

  // reductions and data movement (body_ops.cpp)
  BodyValue reduce(const BodyNode& n, Fn fn, const std::vector<const BodyNode*>& args);
  BodyValue transpose(const BodyNode& n, const std::vector<const BodyNode*>& args);
  BodyValue reshape(const BodyNode& n, const std::vector<const BodyNode*>& args);
  BodyValue cast(const BodyNode& n, const std::vector<const BodyNode*>& args);
  BodyValue concat(const BodyNode& n, const std::vector<const BodyNode*>& args);
  BodyValue slice(const BodyNode& n, const std::vector<const BodyNode*>& args);
};

} // namespace body_impl

} // namespace tapestry::expr
