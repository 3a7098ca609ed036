// The expression, pattern and IPF language of metakernel templates (SPEC §4.2).
// Strings are parsed once (through the ANTLR4 grammar in grammar/) into immutable
// ASTs; applying a template evaluates those ASTs against bindings, never strings.
// No ANTLR type appears in this header.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/diag/error.hpp"
#include "core/zspace/index_projection.hpp"

namespace tapestry::expr {

// ---------------------------------------------------------------- values

// An affine form over the symbolic index point `@`: Σ coeffs[k]·@[k] + constant.
struct Affine {
  std::vector<std::int64_t> coeffs;
  std::int64_t constant = 0;
  bool operator==(const Affine&) const = default;
};

struct DType {
  std::string name; // "float32", "bfloat16", ...
  bool operator==(const DType&) const = default;
};

class Value;
using List = std::vector<Value>;

// int64, bool, dtype name, list (of values), or an affine form in `@` (IPF rows only).
class Value {
public:
  Value() : v_(std::int64_t{0}) {}
  Value(std::int64_t i) : v_(i) {}
  Value(int i) : v_(static_cast<std::int64_t>(i)) {}
  Value(bool b) : v_(b) {}
  Value(DType d) : v_(std::move(d)) {}
  Value(List l) : v_(std::move(l)) {}
  Value(Affine a) : v_(std::move(a)) {}
  static Value ints(const std::vector<std::int64_t>& xs);

  bool isInt() const { return std::holds_alternative<std::int64_t>(v_); }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isDType() const { return std::holds_alternative<DType>(v_); }
  bool isList() const { return std::holds_alternative<List>(v_); }
  bool isAffine() const { return std::holds_alternative<Affine>(v_); }

  std::int64_t asInt() const { return std::get<std::int64_t>(v_); }
  bool asBool() const { return std::get<bool>(v_); }
  const DType& asDType() const { return std::get<DType>(v_); }
  const List& asList() const { return std::get<List>(v_); }
  const Affine& asAffine() const { return std::get<Affine>(v_); }
  // The list as int64s; throws Error naming `what` when an element is not an int.
  std::vector<std::int64_t> toInts(const std::string& what) const;

  // "int", "bool", "dtype", "list", "affine"
  const char* typeName() const;
  // Readable form: 3, true, float32, [1, [2, 3]], 2*@[1] - 1
  std::string toString() const;
  bool operator==(const Value&) const = default;

private:
  std::variant<std::int64_t, bool, DType, List, Affine> v_;
};

// ---------------------------------------------------------------- errors

// A language error: a user Error whose `column` (1-based, inside the expression
// string) says where in the string it is. The metakernel loader turns that into
// a YAML file location with a caret. The message does not repeat the string.
class ExprError : public Error {
public:
  ExprError(int column, std::string message) : Error(std::move(message)), column_(column) {}
  int column() const { return column_; }

private:
  int column_;
};

// ---------------------------------------------------------------- bindings

// Variable bindings ($name -> value) with where each came from, so conflicts can
// say "$k is 8 from X but 9 from W".
struct Binding {
  Value value;
  std::string source; // e.g. "X", "params", "index"
};

class Bindings {
public:
  const Binding* find(std::string_view name) const; // name without '$'
  // Binds `name`; an existing different value is an Error:
  // "$k is 8 from X but 9 from W".
  void bind(const std::string& name, Value value, const std::string& source);
  void set(const std::string& name, Value value, const std::string& source); // overwrite
  const std::map<std::string, Binding, std::less<>>& all() const { return vars_; }

private:
  std::map<std::string, Binding, std::less<>> vars_;
};

// ---------------------------------------------------------------- compiled forms

struct ExprNode;    // AST node (defined in core/expr/ast.hpp)
struct PatternNode; // pattern AST node

// A parsed expression. Cheap to copy (shared immutable AST).
class Expr {
public:
  const std::string& text() const { return text_; }
  const ExprNode& root() const { return *root_; }
  bool usesIndexPoint() const { return usesAt_; } // mentions `@`
  // The whole string the nodes' columns index into: text() itself, except for
  // the two halves of an IPF, whose columns count in the whole "ROWS :> SHAPE".
  const std::string& source() const { return *source_; }

private:
  friend Expr parseExpression(std::string_view);
  friend struct Parser;
  std::string text_;
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const ExprNode> root_;
  bool usesAt_ = false;
};

// A parsed shape pattern such as "[$batch..., $m, $k]".
class Pattern {
public:
  const std::string& text() const { return text_; }
  const PatternNode& root() const { return *root_; }
  // Variables the pattern binds (without '$'), in order of appearance.
  const std::vector<std::string>& variables() const { return variables_; }

private:
  friend Pattern parsePattern(std::string_view);
  friend struct Parser;
  std::string text_;
  std::shared_ptr<const PatternNode> root_;
  std::vector<std::string> variables_;
};

// A parsed IPF "ROWS :> SHAPE". Diagonal shorthand when ROWS never mentions `@`.
class IpfTemplate {
public:
  const std::string& text() const { return text_; }
  const Expr& rows() const { return rows_; }
  const Expr& shape() const { return shape_; }
  bool isDiagonal() const { return !rows_.usesIndexPoint(); }

private:
  friend IpfTemplate parseIpf(std::string_view);
  friend struct Parser;
  std::string text_;
  Expr rows_;
  Expr shape_;
};

// Parsers. Throw ExprError with the column of the problem, e.g.
// "expected ',' or ']'" at column 16. Patterns are also checked statically: two
// ellipses at one level, a name bound twice in one pattern with different roles.
// Expressions are too: unknown function names, wrong argument counts, unknown bare
// names (a bare name is a dtype literal such as float32), int literals past int64.
Expr parseExpression(std::string_view text);
Pattern parsePattern(std::string_view text);
IpfTemplate parseIpf(std::string_view text);

// ---------------------------------------------------------------- evaluation

struct EvalContext {
  const Bindings* bindings = nullptr;
  // Length that `scalar...` fills its list up to (a tensor's rank for shapes and
  // IPF rows); unset where no context exists (fill is then an error).
  std::optional<std::int64_t> fillLength;
  // Rank of the symbolic index point `@` (IPF rows only); unset elsewhere, where
  // `@` is an error.
  std::optional<std::int64_t> indexRank;
};

// Evaluates; errors are ExprError at the offending sub-expression's column:
// unbound variable, type errors, division by zero, overflow, non-affine `@` use.
// Functions: len, sum, prod, min, max, ones, zeros, range, ceil_div, if (lazy),
// all_equal(list), broadcast(a, b), broadcast_rows(@, shape), refine(a, b),
// refine_rows(@, r, shape) (see docs in core/expr/evaluator.cpp and the tests).
// A comprehension `[e for $x in list]` is the list of e with $x bound to each
// element of list in turn ($x shadows an outer binding inside e only).
Value evaluate(const Expr& e, const EvalContext& ctx);

// Matches a shape against a pattern, binding into `bindings` with `source` as the
// origin (the input port name). A mismatch is an ExprError (column in the
// pattern) that shows the shape and pattern: "X is [4, 8, 3] but pattern [$m, $k]
// expects rank 2", "X is [4, 9]: dim 1 is 9, pattern [$m, 8] expects 8"; a
// conflict is Bindings::bind's Error "$k is 8 from X but 9 from W". `$n[$i]` and
// `$s[$i]...` are errors here ("indexed dims ... are only allowed in list inputs").
void match(const Pattern& p, const std::vector<std::int64_t>& shape, Bindings& bindings,
           const std::string& source);
// Matches every shape of a list input; `$n[$i]` binds per element and `$n` becomes
// the list over elements, `$i` the element count; `$s[$i]...` likewise takes the
// dims a `...` would (any number, per element) and `$s` becomes the list of those
// lists. Every other name must agree (element k is named "SOURCE[k]" in messages).
void matchList(const Pattern& p, const std::vector<std::vector<std::int64_t>>& shapes,
               Bindings& bindings, const std::string& source);

// Evaluates an IPF template for an index space of `indexRank` dims onto a tensor of
// `tensorRank` dims. Both halves evaluate with fillLength = tensorRank.
// Diagonal form (no `@`): ROWS are tensorRank ints on the diagonal (needs
// indexRank >= tensorRank; extra index dims get zero columns), offset 0.
// `@` form: each row is an Affine (or an int: a constant row); a non-affine use
// of `@` fails at its operator: "not affine in @: @[0] * @[1]". SHAPE is
// tensorRank ints >= 0. Errors are ExprErrors with columns in the IPF string.
IndexProjection evaluateIpf(const IpfTemplate& t, const Bindings& bindings, std::int64_t indexRank,
                            std::int64_t tensorRank);

} // namespace tapestry::expr
