// Kernel bodies (SPEC §4.1): what one shard of a kernel computes, as block
// expressions over the blocks its IPFs select. Parsed once through the one
// ANTLR grammar (grammar/, rule bodyInput) into the AST below; evaluated either
// on types only (shapes and dtypes: `kernels check`, and before a run) or on
// numbers through a BlockOps (the backends' kernel for a template without a
// native one: host float64 on the CPU backend, device blocks on the CUDA
// backend; and the float64 reference of `run --check`).
//
// A body is a sequence of statements `NAME (, NAME)* = BLOCK_EXPR`. Input ports
// name their blocks (a list port names a list of blocks); a statement binds a
// new name; each output port must be assigned once. Values:
// - blocks: a shape, a dtype and (when evaluating numbers) row-major data held
//   where the evaluator's BlockOps keeps it (on the host in float64, rounded
//   to the block's dtype where one is made: a cast, or an output written back);
// - numbers (float literals, ints, float params), booleans, lists of ints
//   (axes, shapes, permutations) and dtype names, for arguments and scalars.
// Operations: + - * / ** with NumPy broadcasting (a number broadcasts as a
// scalar), '@' (NumPy matmul: batch dims broadcast), unary math (exp, log, sqrt,
// rsqrt, tanh, erf, abs, neg, sigmoid, relu, gelu, floor, ceil, round, sign,
// sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh), tests
// isnan(x), isinf(x) and comparisons equal, less, less_equal, greater,
// greater_equal(a, b) (bool blocks), logical_and, logical_or, logical_xor(a, b)
// and logical_not(x) on bool blocks, mod(a, b) (sign of b) and fmod(a, b)
// (sign of a), reductions sum, mean, max, min, prod (axis=int|list,
// keepdims=bool; no axis: every dim), argmax and argmin (one axis, keepdims=,
// last=: the index of the first or last extreme, an int64 block),
// transpose(x, perm=),
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
#include <utility>
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

// A block's numbers where a BlockOps implementation keeps them (host float64
// vectors, device buffers): always dense and row-major in the block's shape,
// so a reshape shares them. Never changed once made.
class BlockStorage {
public:
  virtual ~BlockStorage() = default;
  virtual std::int64_t elementCount() const = 0;
};
using BlockHandle = std::shared_ptr<const BlockStorage>;

struct BodyValue {
  enum class Kind : std::uint8_t { Number, Bool, Ints, DType, Block, Blocks };
  Kind kind = Kind::Number;
  double number = 0;
  bool isInt = false; // a Number that is an integer (an int binding or literal)
  bool boolean = false;
  std::vector<std::int64_t> ints;
  std::string dtype; // DType
  BlockType type;    // Block
  // Block data (see BlockStorage); null when evaluating types only.
  BlockHandle data;
  std::vector<BodyValue> blocks; // Blocks (a list port)

  static BodyValue block(BlockType type, BlockHandle data = nullptr);
  const char* kindName() const; // "number", "bool", "list", "dtype", "block", "list of blocks"
};

// ---------------------------------------------------------------- block operations
//
// The numeric side of the evaluator: every operation on block data goes
// through one BlockOps, so the same statement walk, shape rules and located
// errors run on host float64 data (hostBlockOps: the CPU backend and the
// float64 reference of `run --check`) or in a backend's memory (the CUDA
// backend, backends/cuda/cuda_body.hpp). The evaluator has checked every
// shape, dtype and argument before it calls an operation; operands are Block
// values (data of their type's shape) or, where noted, Number values, which
// broadcast as scalars. Numbers combined with numbers never reach BlockOps.

// Comparisons (Equal .. GreaterEqual) and the logical ops (And, Or, Xor, on
// 0/1 values) give 1 or 0: a bool block. Mod is the remainder with the sign
// of the divisor (Python's %), Fmod the one with the sign of the dividend (C's).
enum class ElementOp : std::uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Maximum,
  Minimum,
  Mod,
  Fmod,
  Equal,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  And,
  Or,
  Xor
};
enum class UnaryFn : std::uint8_t {
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
  Floor,
  Ceil,
  Round, // half to even
  Sign,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  IsNan, // these three give a bool block
  IsInf,
  Not
};
// ArgMax/ArgMin*: the position of the first (Last: the last) largest or
// smallest element in row-major order of the combined dims (a NaN counts as
// the largest and the smallest, as NumPy's argmax and argmin).
enum class ReduceFn : std::uint8_t {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  ArgMax,
  ArgMin,
  ArgMaxLast,
  ArgMinLast
};

// The float64 meaning of each operation on one element (max and min propagate
// NaN): the host implementation and the evaluator's arithmetic on numbers.
double applyElement(ElementOp op, double x, double y);
double applyUnary(UnaryFn fn, double x);
// Whether argmax (isMax) or argmin moves from `best` to a later element `v`: a
// NaN is the extreme (the first one wins, or the last with `last`), else a
// strictly better v (or an equal one with `last`).
inline bool argReplaces(double v, double best, bool isMax, bool last) {
  if (best != best) { // NaN
    return last && v != v;
  }
  if (v != v) {
    return true;
  }
  if (last) {
    return isMax ? v >= best : v <= best;
  }
  return isMax ? v > best : v < best;
}

// NumPy matmul of a [batchA..., m, k] by b [batchB..., k, n] into
// [batch..., m, n], batch the broadcast of batchA and batchB (a vector operand
// already has its unit dim here).
struct MatmulShape {
  std::vector<std::int64_t> batchA;
  std::vector<std::int64_t> batchB;
  std::vector<std::int64_t> batch;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

class BlockOps {
public:
  virtual ~BlockOps() = default;
  // a op b broadcast to `out`; a and b blocks or numbers (not both numbers).
  virtual BlockHandle elementwise(ElementOp op, const BodyValue& a, const BodyValue& b,
                                  std::span<const std::int64_t> out) = 0;
  virtual BlockHandle unary(UnaryFn fn, const BodyValue& x) = 0;
  // Combines the dims where reduced[d] (one flag per dim of x), in row-major
  // order; the result has x's shape with those dims of extent 1. Mean divides
  // by the number of elements combined.
  virtual BlockHandle reduce(ReduceFn fn, const BodyValue& x, const std::vector<bool>& reduced) = 0;
  virtual BlockHandle matmul(const BodyValue& a, const BodyValue& b, const MatmulShape& shape) = 0;
  // Dim d of the result is dim perm[d] of x (perm is a permutation).
  virtual BlockHandle transpose(const BodyValue& x, std::span<const std::int64_t> perm) = 0;
  // Every element rounded to what `dtype` holds (float32, bfloat16, ints:
  // toward zero, bool: nonzero).
  virtual BlockHandle cast(const BodyValue& x, std::string_view dtype) = 0;
  // The blocks side by side along `axis` into `out`.
  virtual BlockHandle concat(std::span<const BodyValue> blocks, std::size_t axis,
                             std::span<const std::int64_t> out) = 0;
  // x's elements start <= i < stop along `axis`.
  virtual BlockHandle slice(const BodyValue& x, std::size_t axis, std::int64_t start,
                            std::int64_t stop) = 0;
  // condition ? a : b broadcast to `out`; condition a bool block or a Bool
  // value, a and b blocks or numbers (not both numbers).
  virtual BlockHandle where(const BodyValue& condition, const BodyValue& a, const BodyValue& b,
                            std::span<const std::int64_t> out) = 0;
};

// What a backend lends the host implementation: a matrix product and rounding to a dtype.
struct BodyPrimitives {
  // C[m x n] = A[m x k] · B[k x n], row-major, dense, float64.
  std::function<void(std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                     const double* b, double* c)>
      gemm;
  // Rounds every value to what `dtype` can hold (float32, bfloat16, ints: toward zero).
  std::function<void(std::string_view dtype, std::span<double> values)> round;
};

// Host blocks: float64 values in a vector.
class HostBlock final : public BlockStorage {
public:
  explicit HostBlock(std::vector<double> values) : values_(std::move(values)) {}
  std::int64_t elementCount() const override { return static_cast<std::int64_t>(values_.size()); }
  const std::vector<double>& values() const { return values_; }

private:
  std::vector<double> values_;
};
BlockHandle hostBlock(std::vector<double> values);
// The values of a block made by the host implementation (InternalError for
// any other block, or none).
const std::vector<double>& hostValues(const BodyValue& block);

// The host float64 implementation: every operation computes in float64 and
// rounds only where a cast says so; matrix products and rounding are the
// primitives' (which must outlive it).
std::unique_ptr<BlockOps> hostBlockOps(const BodyPrimitives& primitives);

struct BodyEnvironment {
  // Input port -> its block (Block) or blocks (Blocks, a list port).
  std::map<std::string, BodyValue, std::less<>> inputs;
  const Bindings* bindings = nullptr; // $name: ints, lists, bools, dtypes
  // $name for float params (eps): not in the bindings, which hold no floats.
  std::map<std::string, double, std::less<>> numbers;
  // Evaluate numbers (needs `ops`), or types only.
  bool numeric = false;
  BlockOps* ops = nullptr;
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
