// Shared between the body parser (parser.cpp, which owns the ANTLR types) and
// the body evaluator (body.cpp).
#pragma once

#include <vector>

#include "core/expr/body.hpp"

namespace tapestry::expr {

// The checks a body gets right after parsing: known functions, their keyword
// and positional arguments, at least one target per statement, no target named
// twice in one statement. ExprError at the column of the problem.
void checkBodyNames(const std::vector<BodyStatement>& statements);

} // namespace tapestry::expr
