// Tests for parsing the template language (grammar/Tapestry.g4 through
// core/expr/parser.cpp): the AST shapes, precedence, and every syntax error
// with its exact message and column.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "core/expr/ast.hpp"
#include "core/expr/expr.hpp"

using namespace tapestry::expr;

namespace {

struct Failure {
  int column = 0;
  std::string message;
};

Failure failure(const std::function<void()>& f) {
  try {
    f();
  } catch (const ExprError& e) {
    return {e.column(), e.message()};
  }
  FAIL("no ExprError thrown");
  return {};
}

Failure exprError(const std::string& text) {
  return failure([&] { parseExpression(text); });
}
Failure patternError(const std::string& text) {
  return failure([&] { parsePattern(text); });
}
Failure ipfError(const std::string& text) {
  return failure([&] { parseIpf(text); });
}

// A compact rendering of the AST, to check structure and precedence.
std::string show(const ExprNode& n) {
  auto kids = [&](const char* sep) {
    std::string out;
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      out += (i ? sep : "") + show(n.children[i]);
      if (n.kind == ExprKind::List && n.expanded[i]) {
        out += "...";
      }
    }
    return out;
  };
  switch (n.kind) {
  case ExprKind::Int:
    return std::to_string(n.intValue);
  case ExprKind::Bool:
    return n.boolValue ? "true" : "false";
  case ExprKind::DType:
    return n.name;
  case ExprKind::Var:
    return "$" + n.name;
  case ExprKind::IndexPoint:
    return "@";
  case ExprKind::List:
    return "[" + kids(", ") + "]";
  case ExprKind::Neg:
    return "(-" + show(n.children[0]) + ")";
  case ExprKind::Not:
    return "(not " + show(n.children[0]) + ")";
  case ExprKind::Binary:
    return "(" + show(n.children[0]) + " " + binaryOpSpelling(n.op) + " " + show(n.children[1]) +
           ")";
  case ExprKind::And:
    return "(" + show(n.children[0]) + " and " + show(n.children[1]) + ")";
  case ExprKind::Or:
    return "(" + show(n.children[0]) + " or " + show(n.children[1]) + ")";
  case ExprKind::Select:
    return show(n.children[0]) + "[" + show(n.children[1]) + "]";
  case ExprKind::Slice: {
    std::size_t next = 1;
    std::string lo = n.hasLo ? show(n.children[next++]) : "";
    std::string hi = n.hasHi ? show(n.children[next++]) : "";
    return show(n.children[0]) + "[" + lo + ":" + hi + "]";
  }
  case ExprKind::Call:
    return n.name + "(" + kids(", ") + ")";
  case ExprKind::Comprehension:
    return "[" + show(n.children[0]) + " for $" + n.name + " in " + show(n.children[1]) + "]";
  }
  return "?";
}

std::string tree(const std::string& text) {
  return show(parseExpression(text).root());
}

std::string showPattern(const PatternNode& n) {
  std::string kids;
  for (std::size_t i = 0; i < n.children.size(); ++i) {
    kids += (i ? ", " : "") + showPattern(n.children[i]);
  }
  switch (n.kind) {
  case PatternKind::List:
    return "[" + kids + "]";
  case PatternKind::Dim:
    return "dim " + n.name;
  case PatternKind::Rest:
    return "rest " + n.name;
  case PatternKind::Any:
    return "any";
  case PatternKind::AnyRest:
    return "any...";
  case PatternKind::Int:
    return std::to_string(n.value);
  case PatternKind::Group:
    return "group " + n.name + "(" + kids + ")";
  case PatternKind::Indexed:
    return "indexed " + n.name + " by " + n.indexName;
  case PatternKind::IndexedRest:
    return "indexed rest " + n.name + " by " + n.indexName;
  }
  return "?";
}

} // namespace

TEST_CASE("literals, variables, dtypes and lists parse", "[grammar]") {
  CHECK(tree("42") == "42");
  CHECK(tree("-7") == "-7");
  CHECK(tree("true") == "true");
  CHECK(tree("false") == "false");
  CHECK(tree("float32") == "float32");
  CHECK(tree("bfloat16") == "bfloat16");
  CHECK(tree("$batch_2") == "$batch_2");
  CHECK(tree("@") == "@");
  CHECK(tree("[]") == "[]");
  CHECK(tree("[1, $a, [2]]") == "[1, $a, [2]]");
  CHECK(tree("[1, 2,]") == "[1, 2]");
  CHECK(tree("[$a..., 1, ...]") == "[$a..., 1, 1...]");
  CHECK(tree("[...]") == "[1...]");
  CHECK(tree("(((3)))") == "3");
  CHECK(tree("  1\t+\n2 ") == "(1 + 2)");
}

TEST_CASE("operator precedence and associativity", "[grammar]") {
  CHECK(tree("1 + 2 * 3") == "(1 + (2 * 3))");
  CHECK(tree("(1 + 2) * 3") == "((1 + 2) * 3)");
  CHECK(tree("1 - 2 - 3") == "((1 - 2) - 3)");
  CHECK(tree("8 / 2 / 2") == "((8 / 2) / 2)");
  CHECK(tree("2 ** 3 ** 2") == "(2 ** (3 ** 2))");
  CHECK(tree("-2 ** 2") == "(-(2 ** 2))");
  CHECK(tree("-$a * $b") == "((-$a) * $b)");
  CHECK(tree("2 ** -1") == "(2 ** -1)");
  CHECK(tree("$a % 4 + 1") == "(($a % 4) + 1)");
  CHECK(tree("$a + 1 < $b * 2") == "(($a + 1) < ($b * 2))");
  CHECK(tree("not $a == 1 and $b or $c") == "(((not ($a == 1)) and $b) or $c)");
  CHECK(tree("$a or $b and $c") == "($a or ($b and $c))");
  CHECK(tree("$x[0] + $y[-1]") == "($x[0] + $y[-1])");
  CHECK(tree("-$x[0]") == "(-$x[0])");
  CHECK(tree("$x[1] ** 2") == "($x[1] ** 2)");
  CHECK(tree("$a != $b") == "($a != $b)");
  CHECK(tree("$a <= $b") == "($a <= $b)");
  CHECK(tree("$a >= $b") == "($a >= $b)");
  CHECK(tree("$a > $b") == "($a > $b)");
}

TEST_CASE("selection, slices, gathers and calls parse", "[grammar]") {
  CHECK(tree("$x[1]") == "$x[1]");
  CHECK(tree("$x[[2, 0, 1]]") == "$x[[2, 0, 1]]");
  CHECK(tree("$x[$perm]") == "$x[$perm]");
  CHECK(tree("$x[1:3]") == "$x[1:3]");
  CHECK(tree("$x[:-2]") == "$x[:-2]");
  CHECK(tree("$x[1:]") == "$x[1:]");
  CHECK(tree("$x[:]") == "$x[:]");
  CHECK(tree("$x[0][1]") == "$x[0][1]");
  CHECK(tree("[@[:-2]..., @[-1]]") == "[@[:-2]..., @[-1]]");
  CHECK(tree("len($x)") == "len($x)");
  CHECK(tree("if($a > 0, 1, 2)") == "if(($a > 0), 1, 2)");
  CHECK(tree("max(1, 2, 3)") == "max(1, 2, 3)");
  CHECK(tree("ceil_div($n, 4)") == "ceil_div($n, 4)");
  CHECK(tree("refine_rows(@, refine($a, $b), $a)") == "refine_rows(@, refine($a, $b), $a)");
}

TEST_CASE("comprehensions parse", "[grammar]") {
  CHECK(tree("[$t[0] for $t in $s]") == "[$t[0] for $t in $s]");
  CHECK(tree("[$x + 1 for $x in $a + $b]") == "[($x + 1) for $x in ($a + $b)]");
  CHECK(tree("[[$y for $y in $x] for $x in $xs]") == "[[$y for $y in $x] for $x in $xs]");
  CHECK(tree("[$t[:$ax] + $t[$ax+1:] for $t in $s][0]") ==
        "[($t[:$ax] + $t[($ax + 1):]) for $t in $s][0]");
  CHECK(tree("all_equal([len($t) for $t in $s])") == "all_equal([len($t) for $t in $s])");
  CHECK(tree("[@[$k] for $k in $p]") == "[@[$k] for $k in $p]");
  CHECK(tree("[$x for $x in [1, 2]]") == "[$x for $x in [1, 2]]");
  Expr e = parseExpression("[$t for $t in $s]");
  CHECK(e.root().kind == ExprKind::Comprehension);
  CHECK(e.root().name == "t");
  CHECK(e.root().column == 1);
  CHECK(e.root().length == 17);
  CHECK(e.root().opColumn == 5);
  CHECK(parseExpression("[@[$k] for $k in $p]").usesIndexPoint());

  auto check = [](Failure f, int column, const std::string& message) {
    CHECK(f.message == message);
    CHECK(f.column == column);
  };
  check(exprError("[1, 2 for $x in $l]"), 5,
        "a comprehension has one element: [EXPR for $x in LIST]");
  check(exprError("[1, for $x in $l]"), 5,
        "a comprehension has one element: [EXPR for $x in LIST]");
  check(exprError("[for $x in $l]"), 2, "expected an expression before 'for'");
  check(exprError("[$x... for $x in $l]"), 4,
        "the element of a comprehension cannot be spliced with '...'");
  check(exprError("[1 for x in $l]"), 8, "expected a variable");
  check(exprError("[1 for $x $l]"), 11, "expected 'in'");
  check(exprError("[1 for $x in]"), 13, "expected an expression");
  check(exprError("[1 for $x in $l"), 16, "expected ']'");
  check(exprError("[1 for $x in $l, 2]"), 16, "expected ']'");
  check(exprError("for"), 1, "expected an expression");
}

TEST_CASE("nodes record their columns and lengths", "[grammar]") {
  Expr e = parseExpression("$a + len($xs)");
  const ExprNode& root = e.root();
  CHECK(root.column == 1);
  CHECK(root.length == 13);
  CHECK(root.opColumn == 4);
  CHECK(root.children[1].column == 6);
  CHECK(root.children[1].children[0].column == 10);
  CHECK(root.children[1].children[0].length == 3);
  CHECK(e.text() == "$a + len($xs)");
  CHECK_FALSE(e.usesIndexPoint());
  CHECK(parseExpression("[@[0]]").usesIndexPoint());
}

TEST_CASE("syntax errors say what was expected, at the right column", "[grammar]") {
  auto check = [](Failure f, int column, const std::string& message) {
    CHECK(f.message == message);
    CHECK(f.column == column);
  };
  check(exprError("(1 + "), 6, "expected an expression");
  check(exprError(""), 1, "expected an expression");
  check(exprError("1 +"), 4, "expected an expression");
  check(exprError("1 2"), 3, "expected end of input");
  check(exprError("[1, 2]]"), 7, "expected end of input");
  check(exprError("[1, 2"), 6, "expected ',' or ']'");
  check(exprError("[1 2]"), 4, "expected ',' or ']'");
  check(exprError("[1,, 2]"), 4, "expected an expression or '...'");
  check(exprError("[, 1]"), 2, "expected an expression or '...'");
  check(exprError("$x[1"), 5, "expected ']'");
  check(exprError("$x[]"), 4, "expected an expression or ':'");
  check(exprError("$x[1:2:3]"), 7, "expected ']'");
  check(exprError("len(1 2)"), 7, "expected ',' or ')'");
  check(exprError("(1"), 3, "expected ')'");
  check(exprError("1 ** "), 6, "expected an expression");
  check(exprError("true and"), 9, "expected an expression");
  check(exprError("not"), 4, "expected an expression");
  check(exprError("1 :> 2"), 3, "expected end of input");
  check(exprError("$x..."), 3, "expected end of input");
}

TEST_CASE("lexical errors", "[grammar]") {
  Failure dollar = exprError("1 + $ 2");
  CHECK(dollar.message == "expected a variable name after '$'");
  CHECK(dollar.column == 5);
  Failure dot = exprError("[$x..]");
  CHECK(dot.message == "unexpected '.' (an ellipsis is '...')");
  CHECK(dot.column == 4);
  Failure hash = exprError("1 + #");
  CHECK(hash.message == "unexpected character '#'");
  CHECK(hash.column == 5);
  // The earlier error wins, whether from the lexer or the parser.
  Failure first = exprError("[1 2, #]");
  CHECK(first.message == "expected ',' or ']'");
  CHECK(first.column == 4);
}

TEST_CASE("names and functions are checked when parsing", "[grammar]") {
  Failure unknownName = exprError("1 + foo");
  CHECK(unknownName.column == 5);
  CHECK(unknownName.message ==
        "unknown name 'foo' (variables start with '$'; a bare name is a dtype such as float32)");
  Failure bareFunction = exprError("len");
  CHECK(bareFunction.message == "'len' is a function: call it as len(...)");
  Failure unknownFunction = exprError("2 * bar(1)");
  CHECK(unknownFunction.column == 5);
  CHECK(unknownFunction.message ==
        "unknown function 'bar'; known functions: all_equal, broadcast, broadcast_rows, "
        "ceil_div, if, len, max, min, ones, prod, range, refine, refine_rows, sum, zeros");
  CHECK(exprError("len(1, 2)").message == "len() takes 1 argument, got 2");
  CHECK(exprError("if(true)").message == "if() takes 3 arguments, got 1");
  CHECK(exprError("min()").message == "min() takes at least 1 argument, got 0");
  CHECK(exprError("ceil_div(1)").message == "ceil_div() takes 2 arguments, got 1");
  Failure big = exprError("[1, 99999999999999999999]");
  CHECK(big.column == 5);
  CHECK(big.message == "integer literal 99999999999999999999 does not fit in int64");
  CHECK(tree("-9223372036854775807") == "-9223372036854775807");
}

TEST_CASE("patterns parse into their elements", "[grammar]") {
  Pattern p = parsePattern("[$batch..., $shape=($height, $width), $features[$i], 3, _]");
  CHECK(showPattern(p.root()) == "[rest batch, group shape(dim height, dim width), indexed "
                                 "features by i, 3, any]");
  CHECK(showPattern(parsePattern("[_..., $m]").root()) == "[any..., dim m]");
  CHECK(p.variables() ==
        std::vector<std::string>{"batch", "shape", "height", "width", "features", "i"});
  CHECK(showPattern(parsePattern("[]").root()) == "[]");
  CHECK(showPattern(parsePattern("[$m, $k,]").root()) == "[dim m, dim k]");
  CHECK(showPattern(parsePattern("[$g=($a..., $b), $c]").root()) ==
        "[group g(rest a, dim b), dim c]");
  CHECK(parsePattern("[$m, $m]").variables() == std::vector<std::string>{"m"});
  CHECK(parsePattern("[$a[$i], $b[$i]]").variables() == std::vector<std::string>{"a", "i", "b"});
  CHECK(parsePattern("[$m, $k]").text() == "[$m, $k]");
  CHECK(showPattern(parsePattern("[$shapes[$i]...]").root()) == "[indexed rest shapes by i]");
  Pattern r = parsePattern("[$b, $s[$i]..., $c[$i]]");
  CHECK(showPattern(r.root()) == "[dim b, indexed rest s by i, indexed c by i]");
  CHECK(r.variables() == std::vector<std::string>{"b", "s", "i", "c"});
  CHECK(r.root().minWidth == 2);
  CHECK(r.root().variadic);
  CHECK(r.root().children[1].minWidth == 0);
  CHECK(showPattern(parsePattern("[$g=($s[$i]...), 1]").root()) ==
        "[group g(indexed rest s by i), 1]");
}

TEST_CASE("pattern errors", "[grammar]") {
  auto check = [](Failure f, int column, const std::string& message) {
    CHECK(f.message == message);
    CHECK(f.column == column);
  };
  check(patternError("[$batch..., $m $k]"), 16, "expected ',' or ']'");
  check(patternError("[$g=($h $w)]"), 9, "expected ',' or ')'");
  check(patternError("["), 2, "expected a variable, an integer, '_' or ']'");
  check(patternError("[$x"), 4, "expected ',' or ']'");
  check(patternError("$x"), 1, "expected '['");
  check(patternError("[1 + 2]"), 4, "expected ',' or ']'");
  check(patternError("[$a,, $b]"), 5, "expected a variable, an integer or '_'");
  check(patternError("[$g=()]"), 6, "a group needs at least one element");
  check(patternError("[$a..., $b...]"), 9, "at most one '...' per pattern level");
  check(patternError("[_..., $b...]"), 8, "at most one '...' per pattern level");
  check(patternError("[$g=($h..., $w...)]"), 13, "at most one '...' per pattern level");
  check(patternError("[$a..., $g=($b..., 2)]"), 9, "at most one '...' per pattern level");
  check(patternError("[$x, $x...]"), 6, "$x is used both as a dim and as a list (...)");
  check(patternError("[$x..., $x=($a)]"), 9, "$x is used both as a list (...) and as a group");
  check(patternError("[$n[$i], $i]"), 10, "$i is used both as an element count and as a dim");
  check(patternError("[$n[$i], $n]"), 10, "$n is used both as an indexed dim and as a dim");
  check(patternError("[$x.]"), 4, "unexpected '.' (an ellipsis is '...')");
  check(patternError("[$a..., $s[$i]...]"), 9, "at most one '...' per pattern level");
  check(patternError("[$s[$i]..., _...]"), 13, "at most one '...' per pattern level");
  check(patternError("[$s[$i]..., $s]"), 13,
        "$s is used both as an indexed list ([$i]...) and as a dim");
  check(patternError("[$s[$i], $s[$i]...]"), 10,
        "$s is used both as an indexed dim and as an indexed list ([$i]...)");
  check(patternError("[$s[$i]..., $i]"), 13, "$i is used both as an element count and as a dim");
  check(patternError("[$s[$i].., $i]"), 8, "unexpected '.' (an ellipsis is '...')");
  check(patternError("[$s[$i]...[$j]]"), 11, "expected ',' or ']'");
}

TEST_CASE("IPFs parse into rows and shape", "[grammar]") {
  IpfTemplate seed = parseIpf("[..., 1, 0] :> [..., 1, $inner]");
  CHECK(seed.isDiagonal());
  CHECK(seed.rows().text() == "[..., 1, 0]");
  CHECK(seed.shape().text() == "[..., 1, $inner]");
  CHECK(seed.text() == "[..., 1, 0] :> [..., 1, $inner]");
  IpfTemplate x = parseIpf("[@[:-2]..., @[-1]] :> [1...]");
  CHECK_FALSE(x.isDiagonal());
  CHECK(x.rows().text() == "[@[:-2]..., @[-1]]");
  // Columns count in the whole IPF string.
  CHECK(x.shape().root().column == 23);
  CHECK(x.shape().source() == "[@[:-2]..., @[-1]] :> [1...]");

  CHECK(ipfError("[1]").message == "expected ':>'");
  CHECK(ipfError("[1]").column == 4);
  CHECK(ipfError("[1] :>").message == "expected an expression");
  CHECK(ipfError("[1] :>").column == 7);
  CHECK(ipfError("[1] :> [1] :> [2]").message == "expected end of input");
  CHECK(ipfError("[1] :> [1] :> [2]").column == 12);
}
