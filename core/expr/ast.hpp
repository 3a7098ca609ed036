// The ASTs the parser builds from the grammar's parse trees: immutable, shared by
// every application of a template. Each node records where it came from in the
// source string (1-based column and length) so evaluation errors can point there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tapestry::expr {

enum class ExprKind : std::uint8_t {
  Int,        // intValue
  Bool,       // boolValue
  DType,      // name
  Var,        // name (without '$')
  IndexPoint, // `@`
  List,       // children = elements, expanded[i] = element i has `...`
  Neg,        // children = {operand}
  Not,        // children = {operand}
  Binary,     // op, children = {lhs, rhs}
  And,        // children = {lhs, rhs}
  Or,         // children = {lhs, rhs}
  Select,     // children = {base, index}: x[i] or a gather x[[..]]
  Slice,      // children = {base, lo?, hi?} (hasLo, hasHi)
  Call,       // function, children = arguments
  // [body for $name in source]: children = {body, source}, opColumn = 'for'
  Comprehension,
};

enum class BinaryOp : std::uint8_t { Add, Sub, Mul, Div, Mod, Pow, Eq, Ne, Lt, Le, Gt, Ge };

enum class Function : std::uint8_t {
  Len,
  Sum,
  Prod,
  Min,
  Max,
  Ones,
  Zeros,
  Range,
  CeilDiv,
  If,
  Broadcast,
  BroadcastRows,
  Refine,
  RefineRows,
  AllEqual,
};

const char* functionName(Function f);
const char* binaryOpSpelling(BinaryOp op); // "+", "==", ...

struct ExprNode {
  ExprKind kind = ExprKind::Int;
  int column = 0;   // 1-based start of the node in the source string
  int length = 0;   // characters the node spans
  int opColumn = 0; // the operator, '[' or function name; errors about it point here
  std::int64_t intValue = 0;
  bool boolValue = false;
  bool hasLo = false;
  bool hasHi = false;
  BinaryOp op = BinaryOp::Add;
  Function function = Function::Len;
  std::string name;
  std::vector<ExprNode> children;
  std::vector<bool> expanded;
};

enum class PatternKind : std::uint8_t {
  List,    // the whole pattern: children
  Dim,     // $x
  Rest,    // $x...
  Any,     // _
  AnyRest, // _...
  Int,     // 8
  Group,   // $g=(children)
  Indexed, // $n[$i] (name, indexName)
  // $s[$i]... (name, indexName): each element's dims, in list inputs; variadic
  IndexedRest,
};

struct PatternNode {
  PatternKind kind = PatternKind::List;
  int column = 0;
  int length = 0;
  std::int64_t value = 0;
  std::string name;      // without '$'
  std::string indexName; // Indexed: the count variable
  std::vector<PatternNode> children;
  // Dims the node always consumes, and whether it may take more (an ellipsis,
  // or a group holding one). A level holds at most one variadic element.
  std::int64_t minWidth = 1;
  bool variadic = false;
};

} // namespace tapestry::expr
