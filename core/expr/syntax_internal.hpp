// Running the ANTLR lexer and parser over one text with Tapestry's syntax
// errors (syntax.cpp). Private to core/expr: ANTLR types stay in this library.
#pragma once

#include <functional>
#include <string_view>

#include "TapestryParser.h"

namespace tapestry::expr::syntax {

// Checks `text` (valid UTF-8, nesting and operator chains within bounds), runs
// the lexer and `entry` (a parser rule), and calls `convert` on the tree while
// the parser that owns it is alive. The first syntax error is thrown as an
// ExprError at its column.
void run(std::string_view text,
         const std::function<antlr4::ParserRuleContext*(grammar::TapestryParser&)>& entry,
         const std::function<void(antlr4::ParserRuleContext*)>& convert);

} // namespace tapestry::expr::syntax
