// Kernel bodies (SPEC §4.1): what one shard of a kernel computes, as block
// expressions over the blocks its IPFs select. Parsed once through the one
// ANTLR grammar (grammar/, rule bodyInput) into the AST below; evaluated either
// on types only (shapes and dtypes: `kernels check`, and before a run) or on
// numbers (the CPU backend's kernel for a template without a native one, and
// the float64 reference of `run --check`).
//
// A body is a sequence of statements `NAME (, NAME)* = BLOCK_EXPR`. Input ports
// name their blocks (a list port names a list of blocks); a statement binds a
// new name; each output port must be assigned once. Values:
// - blocks: a shape, a dtype and (when evaluating numbers) row-major data held
//   in float64, rounded to the block's dtype where one is made (a cast, or an
//   output written back);
// - numbers (float literals, ints, float params), booleans, lists of ints
//   (axes, shapes, permutations) and dtype names, for arguments and scalars.
// Operations: + - * / ** with NumPy broadcasting (a number broadcasts as a
// scalar), '@' (NumPy matmul: batch dims broadcast), unary math (exp, log, sqrt,
// rsqrt, tanh, erf, abs, neg, sigmoid, relu, gelu), reductions sum, mean, max,
// min (axis=int|list, keepdims=bool; no axis: every dim), transpose(x, perm=),
// reshape(x, shape=) (one -1 allowed), cast(x, DTYPE), concat(LIST, axis=),
// slice(x, axis=, start=, stop=), maximum(a, b), minimum(a, b), pow(a, b) (as
// `**`), where(condition, a, b) (a bool block picks a or b; all three broadcast).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/expr/expr.hpp"

namespace tapestry::expr {

// ---------------------------------------------------------------- AST

enum class BodyKind : std::uint8_t {
  Number, // number (isInt: written without '.' or exponent)
  Bool,   // boolValue
  Var,    // $name (name without '$')
  Name,   // a block, a statement's result or a dtype name (name)
  ListOf, // [children]
  Neg,    // -children[0]
  Binary, // op, children = {lhs, rhs}
  Call,   // name(children), keys[i] = keyword of argument i ("" positional)
};

enum class BodyOp : std::uint8_t { Add, Sub, Mul, Div, Pow, MatMul };

struct BodyNode {
  BodyKind kind = BodyKind::Number;
  int column = 0;   // 1-based start in the body's text
  int length = 0;   // characters spanned
  int opColumn = 0; // the operator or function name
  double number = 0;
  bool isInt = false;
  bool boolValue = false;
  BodyOp op = BodyOp::Add;
  std::string name;
  std::vector<BodyNode> children;
  std::vector<std::string> keys;
  std::vector<int> keyColumns;
};

struct BodyStatement {
  std::vector<std::string> targets;
  std::vector<int> targetColumns;
  BodyNode value;
};

class Body {
public:
  const std::string& text() const { return *text_; }
  const std::vector<BodyStatement>& statements() const { return *statements_; }

private:
  friend Body parseBody(std::string_view);
  std::shared_ptr<const std::string> text_;
  std::shared_ptr<const std::vector<BodyStatement>> statements_;
};

// Parses a body; throws ExprError at the column of the problem: a syntax error,
// an unknown function (with the known list), a misplaced or unknown keyword,
// a statement with no target.
Body parseBody(std::string_view text);

// The functions a body may call, sorted: "abs, cast, concat, ...".
std::string bodyFunctionList();

// ---------------------------------------------------------------- values

struct BlockType {
  std::vector<std::int64_t> shape;
  std::string dtype;
  bool operator==(const BlockType&) const = default;
};
std::string toString(const BlockType& t); // "[4, 8] float32"

struct BodyValue {
  enum class Kind : std::uint8_t { Number, Bool, Ints, DType, Block, Blocks };
  Kind kind = Kind::Number;
  double number = 0;
  bool isInt = false; // a Number that is an integer (an int binding or literal)
  bool boolean = false;
  std::vector<std::int64_t> ints;
  std::string dtype; // DType
  BlockType type;    // Block
  // Block data, row-major, in float64; null when evaluating types only.
  std::shared_ptr<std::vector<double>> data;
  std::vector<BodyValue> blocks; // Blocks (a list port)

  static BodyValue block(BlockType type, std::shared_ptr<std::vector<double>> data = nullptr);
  const char* kindName() const; // "number", "bool", "list", "dtype", "block", "list of blocks"
};

// What a backend lends the evaluator: a matrix product and rounding to a dtype.
struct BodyPrimitives {
  // C[m x n] = A[m x k] · B[k x n], row-major, dense, float64.
  std::function<void(std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                     const double* b, double* c)>
      gemm;
  // Rounds every value to what `dtype` can hold (float32, bfloat16, ints: toward zero).
  std::function<void(std::string_view dtype, std::span<double> values)> round;
};

struct BodyEnvironment {
  // Input port -> its block (Block) or blocks (Blocks, a list port).
  std::map<std::string, BodyValue, std::less<>> inputs;
  const Bindings* bindings = nullptr; // $name: ints, lists, bools, dtypes
  // $name for float params (eps): not in the bindings, which hold no floats.
  std::map<std::string, double, std::less<>> numbers;
  // Evaluate numbers (needs `primitives`), or types only.
  bool numeric = false;
  const BodyPrimitives* primitives = nullptr;
};

// Runs the statements. Returns every name a statement bound, with its value;
// errors are ExprError at the offending sub-expression's column (an unknown
// name, a shape mismatch "cannot broadcast [4, 8] with [3]", an axis out of
// range, a float function of an integer block, division by a list, ...).
std::map<std::string, BodyValue, std::less<>> evaluateBody(const Body& body,
                                                           const BodyEnvironment& env);

// ---------------------------------------------------------------- shape rules
// (shared by the evaluator and by anyone who needs the same answer)

// NumPy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<std::vector<std::int64_t>> broadcastShapes(std::span<const std::int64_t> a,
                                                         std::span<const std::int64_t> b);

} // namespace tapestry::expr
