// Tests for core/expr: evaluation (values, arithmetic, fills, selection,
// functions, `@`), pattern matching and IPF construction, errors included.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "core/expr/expr.hpp"

using namespace tapestry;
using namespace tapestry::expr;

namespace {

using Ints = std::vector<std::int64_t>;

struct Failure {
  int column = 0;
  std::string message;
};

Bindings sample() {
  Bindings b;
  b.set("a", Value(7), "params");
  b.set("b", Value(-2), "params");
  b.set("t", Value(true), "params");
  b.set("f", Value(false), "params");
  b.set("xs", Value::ints({10, 20, 30, 40}), "params");
  b.set("perm", Value::ints({2, 0, 1}), "params");
  b.set("shape", Value::ints({4, 8, 3}), "X");
  b.set("dtype", Value(DType{"float32"}), "X");
  b.set("empty", Value(List{}), "params");
  b.set("big", Value(std::int64_t{INT64_MAX}), "params");
  b.set("small", Value(std::int64_t{INT64_MIN}), "params");
  return b;
}

Value eval(const std::string& text, std::optional<std::int64_t> fill = std::nullopt,
           std::optional<std::int64_t> indexRank = std::nullopt) {
  static const Bindings b = sample();
  EvalContext ctx;
  ctx.bindings = &b;
  ctx.fillLength = fill;
  ctx.indexRank = indexRank;
  return evaluate(parseExpression(text), ctx);
}

std::string show(const std::string& text, std::optional<std::int64_t> fill = std::nullopt,
                 std::optional<std::int64_t> indexRank = std::nullopt) {
  return eval(text, fill, indexRank).toString();
}

Failure failure(const std::function<void()>& f) {
  try {
    f();
  } catch (const ExprError& e) {
    return {e.column(), e.message()};
  } catch (const Error& e) {
    return {0, e.message()};
  }
  FAIL("no error thrown");
  return {};
}

Failure evalError(const std::string& text, std::optional<std::int64_t> fill = std::nullopt,
                  std::optional<std::int64_t> indexRank = std::nullopt) {
  return failure([&] { eval(text, fill, indexRank); });
}

void checkError(const Failure& f, int column, const std::string& message) {
  CHECK(f.message == message);
  CHECK(f.column == column);
}

} // namespace

TEST_CASE("nesting and operator chains are bounded before parsing", "[expr][limits]") {
  // Either would recurse once per level in the parser and the tree walks: a
  // 4000-long chain of unary minus exhausted the stack under AddressSanitizer.
  // len( is the first level.
  const std::string deep255 = std::string(255, '[') + "1" + std::string(255, ']');
  CHECK(show("len(" + deep255 + ")") == "1");
  checkError(failure([&] { parseExpression("len([" + deep255 + "])"); }), 260,
             "nested deeper than 256 levels");
  checkError(failure([] { parseExpression(std::string(5000, '(') + "1"); }), 257,
             "nested deeper than 256 levels");
  std::string chain = "1";
  for (int i = 0; i < 999; ++i) {
    chain += "+1";
  }
  CHECK(show(chain) == "1000");
  checkError(failure([&] { parseExpression(chain + "+1+1"); }), 2002, "more than 1000 operators");
  checkError(failure([] { parseExpression(std::string(100000, '-') + "1"); }), 1001,
             "more than 1000 operators");
  std::string nots;
  for (int i = 0; i < 1001; ++i) {
    nots += "not ";
  }
  checkError(failure([&] { parseExpression(nots + "true"); }), 4001, "more than 1000 operators");
  // $not and $or are variables, not operators.
  std::string vars = "$not";
  for (int i = 0; i < 1100; ++i) {
    vars += ", $or";
  }
  CHECK_NOTHROW(parseExpression("[" + vars + "]"));
  // Patterns and IPFs go through the same check.
  checkError(failure([] { parsePattern(std::string(300, '[') + "$a"); }), 257,
             "nested deeper than 256 levels");
}

TEST_CASE("values print readably", "[expr]") {
  CHECK(Value(3).toString() == "3");
  CHECK(Value(true).toString() == "true");
  CHECK(Value(DType{"bfloat16"}).toString() == "bfloat16");
  CHECK(Value(List{Value(1), Value::ints({2, 3})}).toString() == "[1, [2, 3]]");
  CHECK(Value(Affine{{0, 2}, -1}).toString() == "2*@[1] - 1");
  CHECK(Value(Affine{{1, 1}, 0}).toString() == "@[0] + @[1]");
  CHECK(Value(Affine{{-1, 0, -3}, 4}).toString() == "-@[0] - 3*@[2] + 4");
  CHECK(Value(Affine{{0, 0}, 5}).toString() == "5");
  CHECK(Value(Affine{{}, 0}).typeName() == std::string("affine"));
  CHECK(Value::ints({1, 2}).toInts("x") == Ints{1, 2});
  CHECK(failure([] { Value(List{Value(true)}).toInts("the shape"); }).message ==
        "the shape must be a list of ints, got [true]");
}

TEST_CASE("bindings detect conflicts", "[expr]") {
  Bindings b;
  b.bind("k", Value(8), "X");
  b.bind("k", Value(8), "W");
  CHECK(b.find("k")->source == "X");
  CHECK(failure([&] { b.bind("k", Value(9), "W"); }).message == "$k is 8 from X but 9 from W");
  b.set("k", Value(9), "W");
  CHECK(b.find("k")->value == Value(9));
  CHECK(b.find("nope") == nullptr);
  CHECK(b.all().size() == 1);
}

TEST_CASE("literals, variables and lists evaluate", "[expr]") {
  CHECK(eval("42") == Value(42));
  CHECK(eval("true") == Value(true));
  CHECK(eval("float32") == Value(DType{"float32"}));
  CHECK(eval("$dtype") == Value(DType{"float32"}));
  CHECK(show("[1, $a, [2, 3]]") == "[1, 7, [2, 3]]");
  CHECK(show("[]") == "[]");
  checkError(evalError("$k + 1"), 1, "unbound variable $k");
  checkError(evalError("1 + $k"), 5, "unbound variable $k");
  EvalContext noBindings;
  CHECK(failure([&] { evaluate(parseExpression("$x"), noBindings); }).message ==
        "unbound variable $x");
}

TEST_CASE("integer arithmetic floors and checks overflow", "[expr]") {
  CHECK(eval("1 + 2 * 3") == Value(7));
  CHECK(eval("(1 + 2) * 3") == Value(9));
  CHECK(eval("10 - 4 - 3") == Value(3));
  CHECK(eval("7 / 2") == Value(3));
  CHECK(eval("-7 / 2") == Value(-4));
  CHECK(eval("7 / -2") == Value(-4));
  CHECK(eval("-7 / -2") == Value(3));
  CHECK(eval("-1 % 4") == Value(3));
  CHECK(eval("7 % -3") == Value(-2));
  CHECK(eval("-8 % 4") == Value(0));
  CHECK(eval("$small % -1") == Value(0));
  CHECK(eval("2 ** 10") == Value(1024));
  CHECK(eval("2 ** 3 ** 2") == Value(512));
  CHECK(eval("-2 ** 2") == Value(-4));
  CHECK(eval("(-2) ** 3") == Value(-8));
  CHECK(eval("0 ** 0") == Value(1));
  CHECK(eval("1 ** 1000000000000") == Value(1));
  CHECK(eval("-1 ** 3") == Value(-1));
  CHECK(eval("(-1) ** 1000000000001") == Value(-1));
  CHECK(eval("-$a") == Value(-7));
  CHECK(eval("2 ** 62") == Value(std::int64_t{1} << 62));
  checkError(evalError("1 / 0"), 3, "division by zero: 1 / 0");
  checkError(evalError("$a % (1 - 1)"), 4, "modulo by zero: 7 % 0");
  checkError(evalError("2 ** -1"), 3, "negative exponent: 2 ** -1");
  checkError(evalError("$big + 1"), 6,
             "integer overflow: 9223372036854775807 + 1 does not fit in int64");
  checkError(evalError("$small - 1"), 8,
             "integer overflow: -9223372036854775808 - 1 does not fit in int64");
  checkError(evalError("$big * 2"), 6,
             "integer overflow: 9223372036854775807 * 2 does not fit in int64");
  CHECK(evalError("2 ** 63").column == 3);
  CHECK(evalError("$small / -1").column == 8);
  CHECK(evalError("-$small").column == 1);
}

TEST_CASE("type errors name the operation and the types", "[expr]") {
  CHECK(show("[1, 2] + [3]") == "[1, 2, 3]");
  CHECK(show("$xs + []") == "[10, 20, 30, 40]");
  checkError(evalError("[1] + 1"), 5, "cannot add list and int");
  checkError(evalError("[1] * 2"), 5, "cannot multiply list and int");
  checkError(evalError("$t - 1"), 4, "cannot subtract bool and int");
  checkError(evalError("1 / float32"), 3, "cannot divide int and dtype");
  checkError(evalError("-[1]"), 1, "cannot negate list [1]");
  checkError(evalError("[1] < [2]"), 5, "cannot compare list and list with '<'");
  checkError(evalError("1 and true"), 1, "'and' needs a bool, got int 1");
  checkError(evalError("not 0"), 5, "'not' needs a bool, got int 0");
}

TEST_CASE("comparisons and boolean logic", "[expr]") {
  CHECK(eval("1 < 2") == Value(true));
  CHECK(eval("2 <= 2") == Value(true));
  CHECK(eval("3 > 4") == Value(false));
  CHECK(eval("4 >= 5") == Value(false));
  CHECK(eval("$shape == [4, 8, 3]") == Value(true));
  CHECK(eval("$dtype == float32") == Value(true));
  CHECK(eval("$dtype != bfloat16") == Value(true));
  CHECK(eval("1 == true") == Value(false));
  CHECK(eval("$t and not $f") == Value(true));
  CHECK(eval("$f or $a > 3") == Value(true));
  // Short-circuit: the right side is never evaluated.
  CHECK(eval("$f and $missing") == Value(false));
  CHECK(eval("$t or 1 / 0 == 1") == Value(true));
  CHECK(eval("if($a > 3, 1, 1 / 0)") == Value(1));
  CHECK(eval("if($f, $missing, [2])") == Value::ints({2}));
  checkError(evalError("if(1, 2, 3)"), 4, "the condition of if() needs a bool, got int 1");
}

TEST_CASE("selection, slices and gathers", "[expr]") {
  CHECK(eval("$xs[0]") == Value(10));
  CHECK(eval("$xs[-1]") == Value(40));
  CHECK(eval("$xs[-4]") == Value(10));
  CHECK(show("$xs[1:3]") == "[20, 30]");
  CHECK(show("$xs[:2]") == "[10, 20]");
  CHECK(show("$xs[2:]") == "[30, 40]");
  CHECK(show("$xs[:]") == "[10, 20, 30, 40]");
  CHECK(show("$xs[:-1]") == "[10, 20, 30]");
  CHECK(show("$xs[-2:]") == "[30, 40]");
  CHECK(show("$xs[-100:100]") == "[10, 20, 30, 40]");
  CHECK(show("$xs[3:1]") == "[]");
  CHECK(show("$xs[5:]") == "[]");
  CHECK(show("$xs[[2, 0, 1]]") == "[30, 10, 20]");
  CHECK(show("$xs[$perm]") == "[30, 10, 20]");
  CHECK(show("$xs[[-1, 0]]") == "[40, 10]");
  CHECK(show("[[1, 2], [3]][0]") == "[1, 2]");
  CHECK(eval("[[1, 2], [3]][0][1]") == Value(2));
  checkError(evalError("$xs[4]"), 5, "index 4 is out of range for [10, 20, 30, 40] (length 4)");
  checkError(evalError("$xs[-5]"), 5, "index -5 is out of range for [10, 20, 30, 40] (length 4)");
  checkError(evalError("$xs[[0, 9]]"), 5,
             "index 9 is out of range for [10, 20, 30, 40] (length 4)");
  checkError(evalError("$empty[0]"), 8, "index 0 is out of range for [] (length 0)");
  checkError(evalError("$a[0]"), 3, "cannot index int 7: only lists can be indexed");
  checkError(evalError("$a[0:1]"), 3, "cannot slice int 7: only lists can be sliced");
  checkError(evalError("$xs[true]"), 5, "an index must be an int or a list of ints, got bool true");
  checkError(evalError("$xs[[true]]"), 5, "a gather index must be a list of ints, got [true]");
  checkError(evalError("$xs[[1]:]"), 5, "a slice start must be an int, got list [1]");
}

TEST_CASE("expansion splices lists and fills scalars", "[expr]") {
  CHECK(show("[$xs..., 1]") == "[10, 20, 30, 40, 1]");
  CHECK(show("[$xs[:1]..., $xs[2:]...]") == "[10, 30, 40]");
  CHECK(show("[$empty...]") == "[]");
  CHECK(show("[1...]", 3) == "[1, 1, 1]");
  CHECK(show("[...]", 2) == "[1, 1]");
  CHECK(show("[..., 1, 0]", 3) == "[1, 1, 0]");
  CHECK(show("[..., 1, $a]", 2) == "[1, 7]");
  CHECK(show("[0, $a...]", 3) == "[0, 7, 7]");
  CHECK(show("[$shape..., 0...]", 5) == "[4, 8, 3, 0, 0]");
  CHECK(show("[0..., $shape...]", 3) == "[4, 8, 3]");
  CHECK(show("[1...]", 0) == "[]");
  // The fill belongs to the innermost list literal.
  CHECK(show("[[2...], 5]", 2) == "[[2, 2], 5]");
  checkError(evalError("[1..., 2...]", 4), 8, "at most one scalar fill (x...) per list");
  checkError(evalError("[..., 0, ...]", 4), 10, "at most one scalar fill (x...) per list");
  checkError(evalError("[1, 1...]"), 5, "scalar fill needs a context length (a tensor rank)");
  checkError(evalError("[$shape..., 7, 1...]", 2), 16,
             "list already has 4 elements, more than the context length 2");
}

TEST_CASE("list and arithmetic functions", "[expr]") {
  CHECK(eval("len($xs)") == Value(4));
  CHECK(eval("len([])") == Value(0));
  CHECK(eval("sum($xs)") == Value(100));
  CHECK(eval("sum([])") == Value(0));
  CHECK(eval("prod($shape)") == Value(96));
  CHECK(eval("prod([])") == Value(1));
  CHECK(eval("min($xs)") == Value(10));
  CHECK(eval("max($xs)") == Value(40));
  CHECK(eval("min(3, -1, 2)") == Value(-1));
  CHECK(eval("max(3, 9)") == Value(9));
  CHECK(show("ones(3)") == "[1, 1, 1]");
  CHECK(show("zeros(2)") == "[0, 0]");
  CHECK(show("range(4)") == "[0, 1, 2, 3]");
  CHECK(show("range(0)") == "[]");
  CHECK(show("[ones(len($shape) - 2)..., 1, 0]") == "[1, 1, 0]");
  CHECK(eval("ceil_div(7, 2)") == Value(4));
  CHECK(eval("ceil_div(8, 2)") == Value(4));
  CHECK(eval("ceil_div(-7, 2)") == Value(-3));
  CHECK(eval("ceil_div(0, 5)") == Value(0));
  checkError(evalError("len(3)"), 5, "len() needs a list, got int 3");
  checkError(evalError("sum([1, [2]])"), 5, "sum() needs a list of ints, got [1, [2]]");
  checkError(evalError("prod($big)"), 6,
             "the argument of prod() must be a list of ints, got int 9223372036854775807");
  checkError(evalError("prod([$big, 2])"), 1,
             "integer overflow: 9223372036854775807 * 2 does not fit in int64");
  checkError(evalError("min([])"), 5, "min() of an empty list");
  checkError(evalError("max(1, [2])"), 8, "an argument of max() must be an int, got list [2]");
  checkError(evalError("ones(-1)"), 6, "ones() needs a length from 0 to 16777216, got -1");
  checkError(evalError("ceil_div(1, 0)"), 13, "division by zero: ceil_div(1, 0)");
}

TEST_CASE("comprehensions map an expression over a list", "[expr]") {
  CHECK(show("[$x * 2 for $x in $xs]") == "[20, 40, 60, 80]");
  CHECK(show("[$x for $x in $empty]") == "[]");
  CHECK(show("[len($x) for $x in [[1], [], [2, 3]]]") == "[1, 0, 2]");
  // The variable is visible in the element only, and shadows an outer binding there.
  CHECK(show("[[$a for $a in [1, 2]]..., $a]") == "[1, 2, 7]");
  CHECK(show("[[$x * $y for $y in [1, 2]] for $x in [3, 4]]") == "[[3, 6], [4, 8]]");
  CHECK(show("[[$x for $x in $x] for $x in [[1, 2], [3]]]") == "[[1, 2], [3]]");
  CHECK(show("[$x for $x in [$x * 10 for $x in [1, 2]]]") == "[10, 20]");
  CHECK(show("sum([$shape[$k] for $k in range(2)])") == "12");
  CHECK(show("[[$x, 0...] for $x in [1, 2]]", 3) == "[[1, 0, 0], [2, 0, 0]]");
  CHECK(show("[@[$k] for $k in [2, 0]]", std::nullopt, 3) == "[@[2], @[0]]");
  CHECK(show("[@[$k] + $k for $k in range(2)]", std::nullopt, 2) == "[@[0], @[1] + 1]");
  checkError(evalError("[1 for $x in 3]"), 14,
             "the source of a comprehension ('in') must be a list, got int 3");
  checkError(evalError("[$x + 1 for $x in [1, [2]]]"), 5, "cannot add list and int");
  checkError(evalError("[[$x for $x in [1]], $x]"), 22, "unbound variable $x");
  checkError(evalError("[$y for $x in [1]]"), 2, "unbound variable $y");
}

TEST_CASE("all_equal compares whole values", "[expr]") {
  CHECK(eval("all_equal([])") == Value(true));
  CHECK(eval("all_equal([3])") == Value(true));
  CHECK(eval("all_equal([3, 3, 3])") == Value(true));
  CHECK(eval("all_equal([3, 3, 4])") == Value(false));
  CHECK(eval("all_equal([[1, 2], [1, 2]])") == Value(true));
  CHECK(eval("all_equal([[1, 2], [1, 2, 3]])") == Value(false));
  CHECK(eval("all_equal([1, true])") == Value(false));
  CHECK(eval("all_equal([float32, float32])") == Value(true));
  checkError(evalError("all_equal(3)"), 11,
             "the argument of all_equal() must be a list, got int 3");
}

TEST_CASE("list-of-shapes idioms (concat along any axis)", "[expr]") {
  Bindings b;
  b.set("shapes",
        Value(List{Value::ints({2, 3, 8}), Value::ints({2, 5, 8}), Value::ints({2, 1, 8})}),
        "tensors");
  b.set("ax", Value(1), "let");
  auto at = [&](const std::string& text) {
    return evaluate(parseExpression(text), EvalContext{&b, std::nullopt, std::nullopt}).toString();
  };
  CHECK(at("[$t[$ax] for $t in $shapes]") == "[3, 5, 1]");
  CHECK(at("[$t[:$ax] + $t[$ax+1:] for $t in $shapes]") == "[[2, 8], [2, 8], [2, 8]]");
  CHECK(at("all_equal([$t[:$ax] + $t[$ax+1:] for $t in $shapes])") == "true");
  CHECK(at("all_equal([len($t) for $t in $shapes])") == "true");
  CHECK(at("[$shapes[0][:$ax]..., sum([$t[$ax] for $t in $shapes]), $shapes[0][$ax+1:]...]") ==
        "[2, 9, 8]");
  b.set("ax", Value(2), "let");
  CHECK(at("all_equal([$t[:$ax] + $t[$ax+1:] for $t in $shapes])") == "false");
}

TEST_CASE("broadcast follows NumPy", "[expr]") {
  CHECK(show("broadcast([4, 3], [3])") == "[4, 3]");
  CHECK(show("broadcast([4, 1], [1, 5])") == "[4, 5]");
  CHECK(show("broadcast([2, 1, 3], [7, 1])") == "[2, 7, 3]");
  CHECK(show("broadcast([], [2, 2])") == "[2, 2]");
  CHECK(show("broadcast([0], [1])") == "[0]");
  checkError(evalError("1 + broadcast([4, 3], [5])"), 5, "cannot broadcast [4, 3] with [5]");
  checkError(evalError("broadcast(1, [5])"), 11,
             "the first argument of broadcast() must be a list of ints, got int 1");
}

TEST_CASE("refine finds the coarsest common refinement", "[expr]") {
  CHECK(show("refine([6, 4], [2, 12])") == "[2, 3, 4]");
  CHECK(show("refine([2, 12], [6, 4])") == "[2, 3, 4]");
  CHECK(show("refine([4, 6], [2, 12])") == "[2, 2, 6]");
  CHECK(show("refine([2, 6], [4, 3])") == "[2, 2, 3]");
  CHECK(show("refine([24], [2, 3, 4])") == "[2, 3, 4]");
  CHECK(show("refine([2, 3, 4], [2, 3, 4])") == "[2, 3, 4]");
  CHECK(show("refine([6, 1, 4], [24])") == "[6, 4]");
  CHECK(show("refine([2, 3], [3, 2])") == "[]");
  CHECK(show("refine([4, 6], [6, 4])") == "[]");
  CHECK(show("refine([2, 3], [7])") == "[]");
  CHECK(show("refine([0, 3], [0, 3])") == "[0, 3]");
  CHECK(show("refine([0, 3], [3, 0])") == "[]");
}

TEST_CASE("the index point @ gives affine forms", "[expr]") {
  CHECK(eval("len(@)", std::nullopt, 3) == Value(3));
  CHECK(eval("@[1]", std::nullopt, 3) == Value(Affine{{0, 1, 0}, 0}));
  CHECK(show("@[-1]", std::nullopt, 3) == "@[2]");
  CHECK(show("2*@[1] - 1", std::nullopt, 3) == "2*@[1] - 1");
  CHECK(show("@[0] + @[1]", std::nullopt, 2) == "@[0] + @[1]");
  CHECK(show("3 * (@[0] - 2) + @[0] * 2", std::nullopt, 1) == "5*@[0] - 6");
  CHECK(show("-@[0] + 4", std::nullopt, 1) == "-@[0] + 4");
  CHECK(show("[@[:-2]..., @[-1]]", std::nullopt, 4) == "[@[0], @[1], @[3]]");
  CHECK(show("sum(@)", std::nullopt, 2) == "@[0] + @[1]");
  CHECK(eval("@[0] == @[0]", std::nullopt, 2) == Value(true));
  checkError(evalError("@[0] * @[1]", std::nullopt, 2), 6, "not affine in @: @[0] * @[1]");
  checkError(evalError("1 + @[0] / 2", std::nullopt, 2), 10, "not affine in @: @[0] / 2");
  checkError(evalError("@[0] % 2", std::nullopt, 2), 6, "not affine in @: @[0] % 2");
  checkError(evalError("@[0] ** 2", std::nullopt, 2), 6, "not affine in @: @[0] ** 2");
  checkError(evalError("[1, @[0]]"), 5, "@ is only allowed in IPF rows");
  checkError(evalError("@[0] < 1", std::nullopt, 1), 6, "cannot compare affine and int with '<'");
}

TEST_CASE("broadcast_rows reads size-1 dims at element 0", "[expr]") {
  CHECK(show("broadcast_rows(@, [4, 3])", std::nullopt, 2) == "[@[0], @[1]]");
  CHECK(show("broadcast_rows(@, [3])", std::nullopt, 2) == "[@[1]]");
  CHECK(show("broadcast_rows(@, [1, 3])", std::nullopt, 3) == "[0, @[2]]");
  CHECK(show("broadcast_rows(@, [5, 1])", std::nullopt, 3) == "[@[1], 0]");
  CHECK(show("broadcast_rows(@, [])", std::nullopt, 2) == "[]");
  CHECK(show("broadcast_rows(range(3), [2, 1])") == "[1, 0]");
  checkError(evalError("broadcast_rows(@, [1, 2, 3])", std::nullopt, 2), 1,
             "broadcast_rows(): shape [1, 2, 3] has 3 dims, more than the index point's 2");
}

TEST_CASE("refine_rows maps a refinement onto a shape", "[expr]") {
  CHECK(show("refine_rows(@, [2, 3, 4], [6, 4])", std::nullopt, 3) == "[3*@[0] + @[1], @[2]]");
  CHECK(show("refine_rows(@, [2, 3, 4], [2, 12])", std::nullopt, 3) == "[@[0], 4*@[1] + @[2]]");
  CHECK(show("refine_rows(@, [2, 3, 4], [24])", std::nullopt, 3) == "[12*@[0] + 4*@[1] + @[2]]");
  CHECK(show("refine_rows(@, [6, 4], [6, 1, 4])", std::nullopt, 2) == "[@[0], 0, @[1]]");
  CHECK(show("refine_rows(@, refine([6, 4], [2, 12]), [6, 4])", std::nullopt, 3) ==
        "[3*@[0] + @[1], @[2]]");
  checkError(evalError("refine_rows(@, [2, 3], [3, 2])", std::nullopt, 2), 1,
             "refine_rows(): [2, 3] does not refine [3, 2]");
  checkError(evalError("refine_rows(@, [2, 3], [6])", std::nullopt, 3), 1,
             "refine_rows(): the index point has 3 dims but the refinement [2, 3] has 2");
  checkError(evalError("refine_rows(@, [2, 3, 5], [6])", std::nullopt, 3), 1,
             "refine_rows(): [2, 3, 5] does not refine [6]");
}

// ---------------------------------------------------------------- patterns

TEST_CASE("patterns bind dims, lists and groups", "[expr][pattern]") {
  Bindings b;
  match(parsePattern("[$batch..., $m, $k]"), {2, 5, 4, 8}, b, "X");
  CHECK(b.find("batch")->value == Value::ints({2, 5}));
  CHECK(b.find("m")->value == Value(4));
  CHECK(b.find("k")->value == Value(8));
  CHECK(b.find("k")->source == "X");
  match(parsePattern("[$batch..., $k, $n]"), {2, 5, 8, 3}, b, "W");
  CHECK(b.find("n")->value == Value(3));

  Bindings c;
  match(parsePattern("[$batch..., $m]"), {7}, c, "X");
  CHECK(c.find("batch")->value == Value(List{}));
  match(parsePattern("[_, $g=($h, $w), _...]"), {1, 2, 3, 4, 5}, c, "Y");
  CHECK(c.find("g")->value == Value::ints({2, 3}));
  CHECK(c.find("h")->value == Value(2));
  CHECK(c.find("w")->value == Value(3));
  match(parsePattern("[$q=($r..., $s), 5]"), {6, 7, 8, 5}, c, "Z");
  CHECK(c.find("q")->value == Value::ints({6, 7, 8}));
  CHECK(c.find("r")->value == Value::ints({6, 7}));
  CHECK(c.find("s")->value == Value(8));
  match(parsePattern("[]"), {}, c, "S");
  match(parsePattern("[$x, $x]"), {3, 3}, c, "T");
  CHECK(c.find("x")->value == Value(3));
}

TEST_CASE("pattern mismatches and conflicts", "[expr][pattern]") {
  Bindings b;
  checkError(failure([&] {
               match(parsePattern("[$m, $k]"), {4, 8, 3}, b, "X");
             }),
             1, "X is [4, 8, 3] but pattern [$m, $k] expects rank 2");
  checkError(failure([&] { match(parsePattern("[$b..., $m, $k]"), {4}, b, "X"); }), 1,
             "X is [4] but pattern [$b..., $m, $k] expects rank at least 2");
  checkError(failure([&] {
               match(parsePattern("[$m, 8]"), {4, 9}, b, "X");
             }),
             6, "X is [4, 9]: dim 1 is 9, pattern [$m, 8] expects 8");
  Bindings c;
  match(parsePattern("[$m, $k]"), {4, 8}, c, "X");
  CHECK(failure([&] {
          match(parsePattern("[$k, $n]"), {9, 3}, c, "W");
        }).message == "$k is 8 from X but 9 from W");
  Bindings d;
  CHECK(failure([&] {
          match(parsePattern("[$x, $x]"), {3, 4}, d, "T");
        }).message == "$x is 3 from T but 4 from T");
  Bindings e;
  checkError(failure([&] { match(parsePattern("[$n[$i]]"), {3}, e, "X"); }), 2,
             "indexed dims ($n[$i]) are only allowed in list inputs");
  checkError(failure([&] { match(parsePattern("[$s[$i]...]"), {3}, e, "X"); }), 2,
             "indexed lists ($s[$i]...) are only allowed in list inputs");
}

TEST_CASE("list inputs bind per-element dims", "[expr][pattern]") {
  Bindings b;
  matchList(parsePattern("[$batch..., $shape=($height, $width), $features[$i]]"),
            {{100, 128, 256, 512, 2}, {100, 128, 256, 512, 4}}, b, "tensors");
  matchList(parsePattern("[$shape=($height, $width), $features[$i]]"),
            {{256, 512, 2}, {256, 512, 4}}, b, "masks");
  CHECK(b.find("batch")->value == Value::ints({100, 128}));
  CHECK(b.find("shape")->value == Value::ints({256, 512}));
  CHECK(b.find("height")->value == Value(256));
  CHECK(b.find("width")->value == Value(512));
  CHECK(b.find("i")->value == Value(2));
  CHECK(b.find("features")->value == Value::ints({2, 4}));

  Bindings c;
  CHECK(failure([&] {
          matchList(parsePattern("[$h, $f[$i]]"), {{5, 1}, {6, 2}}, c, "tensors");
        }).message == "$h is 5 from tensors[0] but 6 from tensors[1]");
  Bindings d;
  CHECK(failure([&] {
          matchList(parsePattern("[$batch..., $f[$i]]"), {{1, 2}, {1, 2, 3}}, d, "tensors");
        }).message == "$batch is [1] from tensors[0] but [1, 2] from tensors[1]");
  Bindings e;
  matchList(parsePattern("[$n[$i]]"), {}, e, "tensors");
  CHECK(e.find("n")->value == Value(List{}));
  CHECK(e.find("i")->value == Value(0));
  Bindings f;
  checkError(failure([&] {
               matchList(parsePattern("[$a, $n[$i]]"), {{1, 2}, {3}}, f, "ts");
             }),
             1, "ts[1] is [3] but pattern [$a, $n[$i]] expects rank 2");
}

TEST_CASE("list inputs bind per-element lists of dims", "[expr][pattern]") {
  Bindings b;
  matchList(parsePattern("[$shapes[$i]...]"), {{2, 3}, {2, 5}, {}}, b, "tensors");
  CHECK(b.find("shapes")->value ==
        Value(List{Value::ints({2, 3}), Value::ints({2, 5}), Value(List{})}));
  CHECK(b.find("shapes")->source == "tensors");
  CHECK(b.find("i")->value == Value(3));

  Bindings c;
  matchList(parsePattern("[$b, $s[$i]..., $c[$i]]"), {{1, 2, 3, 4}, {1, 5}}, c, "ts");
  CHECK(c.find("b")->value == Value(1));
  CHECK(c.find("s")->value == Value(List{Value::ints({2, 3}), Value(List{})}));
  CHECK(c.find("c")->value == Value::ints({4, 5}));
  CHECK(c.find("i")->value == Value(2));

  Bindings d;
  matchList(parsePattern("[$s[$i]...]"), {}, d, "ts");
  CHECK(d.find("s")->value == Value(List{}));
  CHECK(d.find("i")->value == Value(0));

  Bindings e;
  CHECK(failure([&] {
          matchList(parsePattern("[$b, $s[$i]...]"), {{1, 2}, {2, 2}}, e, "ts");
        }).message == "$b is 1 from ts[0] but 2 from ts[1]");
  Bindings f;
  checkError(failure([&] {
               matchList(parsePattern("[$a, $s[$i]...]"), {{1}, {}}, f, "ts");
             }),
             1, "ts[1] is [] but pattern [$a, $s[$i]...] expects rank at least 1");
}

// ---------------------------------------------------------------- IPFs

namespace {

IndexProjection ipf(const std::string& text, const Bindings& b, std::int64_t indexRank,
                    std::int64_t tensorRank) {
  return evaluateIpf(parseIpf(text), b, indexRank, tensorRank);
}

Failure ipfError(const std::string& text, const Bindings& b, std::int64_t indexRank,
                 std::int64_t tensorRank) {
  return failure([&] { ipf(text, b, indexRank, tensorRank); });
}

} // namespace

TEST_CASE("the seed's diagonal IPF shorthand", "[expr][ipf]") {
  Bindings b;
  b.set("inner", Value(5), "X");
  IndexProjection x = ipf("[..., 1, 0] :> [..., 1, $inner]", b, 3, 3);
  CHECK(x.map().projection() == ZMatrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 0}});
  CHECK(x.map().offset() == ZPoint{0, 0, 0});
  CHECK(x.shape() == ZPoint{1, 1, 5});
  // Index dims beyond the tensor's rank get zero columns.
  IndexProjection out = ipf("[...] :> [...]", b, 3, 2);
  CHECK(out.map().projection() == ZMatrix{{1, 0, 0}, {0, 1, 0}});
  CHECK(out.shape() == ZPoint{1, 1});
  CHECK(ipf("[1...] :> [1...]", b, 2, 2) == IndexProjection::identity(2));
  checkError(ipfError("[...] :> [...]", b, 2, 3), 1,
             "a diagonal IPF needs an index rank >= the tensor rank (index rank 2, tensor rank 3)");
  checkError(ipfError("[1, 1] :> [1...]", b, 3, 3), 1, "IPF has 2 rows but the tensor has rank 3");
  checkError(ipfError("[1, [2]] :> [1...]", b, 2, 2), 5,
             "diagonal IPF entry 1 must be an int, got list [2]");
}

TEST_CASE("IPFs affine in @", "[expr][ipf]") {
  Bindings b;
  // SPEC matmul: index [b, m, n, k].
  IndexProjection x = ipf("[@[:-2]..., @[-1]] :> [1...]", b, 4, 3);
  CHECK(x.map().projection() == ZMatrix{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}});
  CHECK(x.map().offset() == ZPoint{0, 0, 0});
  CHECK(x.shape() == ZPoint{1, 1, 1});
  IndexProjection w = ipf("[@[:-3]..., @[-1], @[-2]] :> [1...]", b, 4, 3);
  CHECK(w.map().projection() == ZMatrix{{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}});
  IndexProjection result = ipf("[@[:-1]...] :> [1...]", b, 4, 3);
  CHECK(result.map().projection() == ZMatrix{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}});
  CHECK(ipf("[@...] :> [1...]", b, 3, 3) == IndexProjection::identity(3));

  // Offsets, strides and constant rows.
  IndexProjection conv = ipf("[2*@[0] - 1, @[0] + @[1], 7] :> [3, 3, 1]", b, 2, 3);
  CHECK(conv.map().projection() == ZMatrix{{2, 0}, {1, 1}, {0, 0}});
  CHECK(conv.map().offset() == ZPoint{-1, 0, 7});
  CHECK(conv.shape() == ZPoint{3, 3, 1});

  // Broadcasting and reshape helpers produce whole row lists.
  b.set("shape", Value::ints({1, 3}), "A");
  IndexProjection bc = ipf("broadcast_rows(@, $shape) :> [1...]", b, 3, 2);
  CHECK(bc.map().projection() == ZMatrix{{0, 0, 0}, {0, 0, 1}});
  b.set("in", Value::ints({6, 4}), "input");
  b.set("out", Value::ints({2, 12}), "result");
  IndexProjection rs = ipf("refine_rows(@, refine($in, $out), $in) :> [1...]", b, 3, 2);
  CHECK(rs.map().projection() == ZMatrix{{3, 1, 0}, {0, 0, 1}});

  checkError(ipfError("[@[0] * @[1], @[1]] :> [1...]", b, 2, 2), 7, "not affine in @: @[0] * @[1]");
  checkError(ipfError("[@[0], @[1], @[0]] :> [1...]", b, 2, 2), 1,
             "IPF has 3 rows but the tensor has rank 2");
  checkError(ipfError("[@[0], [1]] :> [1...]", b, 2, 2), 8,
             "IPF row 1 must be affine in @ or an int, got list [1]");
  checkError(ipfError("[@[0], @[1]] :> [1, @[0]]", b, 2, 2), 21, "@ is only allowed in IPF rows");
  checkError(ipfError("[@[0], @[1]] :> [1, -1]", b, 2, 2), 17,
             "IPF shape must be a list of ints >= 0, got list [1, -1]");
  checkError(ipfError("[@[0], @[1]] :> [1, 1, 1]", b, 2, 2), 17,
             "IPF shape [1, 1, 1] has 3 dims but the tensor has rank 2");
  checkError(ipfError("[@[0], @[5]] :> [1...]", b, 2, 2), 10,
             "index 5 is out of range for [@[0], @[1]] (length 2)");
  checkError(ipfError("@[0] :> [1...]", b, 2, 1), 1, "IPF rows must be a list, got affine @[0]");
}
