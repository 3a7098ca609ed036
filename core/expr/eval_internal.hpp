// The evaluator's internals, shared by evaluator.cpp, pattern.cpp and ipf.cpp and
// the unit tests; not part of the public interface (core/expr/expr.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/expr/ast.hpp"
#include "core/expr/expr.hpp"

namespace tapestry::expr {

// The coarsest common refinement of two shapes: the shape whose dims, grouped
// consecutively, give either shape (refine([6, 4], [2, 12]) = [2, 3, 4]).
// nullopt when none exists (different products, or a boundary of one shape cuts
// a dim of the other unevenly, as [2, 3] vs [3, 2]).
std::optional<std::vector<std::int64_t>> commonRefinement(const std::vector<std::int64_t>& a,
                                                          const std::vector<std::int64_t>& b);

class ExprEvaluator {
public:
  // `source` is the string the nodes' columns index into.
  ExprEvaluator(std::string_view source, const EvalContext& ctx) : source_(source), ctx_(ctx) {}

  Value eval(const ExprNode& n) const;

private:
  Value arith(BinaryOp op, const Value& a, const Value& b, const ExprNode& node) const;
  Value binary(const ExprNode& n) const;
  Value list(const ExprNode& n) const;
  Value indexPoint(const ExprNode& n) const;
  Value select(const ExprNode& n) const;
  Value slice(const ExprNode& n) const;
  Value call(const ExprNode& n) const;
  bool boolean(const ExprNode& n, const char* what) const;
  std::int64_t integer(const ExprNode& n, const std::string& what) const;
  std::vector<std::int64_t> ints(const ExprNode& n, const std::string& what) const;
  List listOf(const ExprNode& n, const std::string& what) const;
  std::string textOf(const ExprNode& n) const;

  Value comprehension(const ExprNode& n) const;
  const Value* lookup(const std::string& name) const;

  std::string_view source_;
  const EvalContext& ctx_;
  // Variables of the enclosing comprehensions, innermost last; they shadow
  // ctx_.bindings. Mutable: eval() is const but a comprehension binds as it goes.
  mutable std::vector<std::pair<std::string, Value>> locals_;
};

} // namespace tapestry::expr
