// Kernel bodies (core/expr/body.hpp): parsing through the one grammar, the
// located errors, shape and dtype rules, and numbers against hand-computed
// values (matrix products through a naive gemm lent as the primitive).
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/expr/body.hpp"

using namespace tapestry;
using namespace tapestry::expr;

namespace {

using Shape = std::vector<std::int64_t>;

struct Failure {
  int column = 0;
  std::string message;
};

Failure parseFailure(const std::string& text) {
  try {
    (void)parseBody(text);
  } catch (const ExprError& e) {
    return {e.column(), e.message()};
  }
  FAIL("expected a parse error for " << text);
  return {};
}

const BodyPrimitives& naive() {
  static const BodyPrimitives p{[](std::int64_t m, std::int64_t n, std::int64_t k, const double* a,
                                   const double* b, double* c) {
                                  for (std::int64_t i = 0; i < m; ++i) {
                                    for (std::int64_t j = 0; j < n; ++j) {
                                      double acc = 0;
                                      for (std::int64_t x = 0; x < k; ++x) {
                                        acc += a[i * k + x] * b[x * n + j];
                                      }
                                      c[i * n + j] = acc;
                                    }
                                  }
                                },
                                [](std::string_view dtype, std::span<double> values) {
                                  for (double& v : values) {
                                    v = dtype == "float32"
                                            ? static_cast<double>(static_cast<float>(v))
                                            : std::trunc(v);
                                  }
                                }};
  return p;
}

BodyValue block(Shape shape, std::vector<double> data, std::string dtype = "float64") {
  return BodyValue::block(BlockType{std::move(shape), std::move(dtype)},
                          hostBlock(std::move(data)));
}

struct Env {
  BodyEnvironment env;
  Bindings bindings;
  std::unique_ptr<BlockOps> ops = hostBlockOps(naive());
  Env() {
    env.bindings = &bindings;
    env.ops = ops.get();
    env.numeric = true;
  }
  std::map<std::string, BodyValue, std::less<>> run(const std::string& text) {
    return evaluateBody(parseBody(text), env);
  }
  Failure fail(const std::string& text) {
    try {
      (void)run(text);
    } catch (const ExprError& e) {
      return {e.column(), e.message()};
    }
    FAIL("expected an evaluation error for " << text);
    return {};
  }
};

} // namespace

TEST_CASE("bodies parse statements, floats, keywords and '@'", "[body]") {
  Body b = parseBody("t = x @ w; result = t * 1.5e-1 + sum(t, axis=-1, keepdims=true)");
  REQUIRE(b.statements().size() == 2);
  CHECK(b.statements()[0].targets == std::vector<std::string>{"t"});
  const BodyNode& mm = b.statements()[0].value;
  CHECK(mm.kind == BodyKind::Binary);
  CHECK(mm.op == BodyOp::MatMul);
  CHECK(mm.opColumn == 7);
  const BodyNode& add = b.statements()[1].value;
  CHECK(add.op == BodyOp::Add);
  CHECK(add.children[0].children[1].number == Approx(0.15));
  const BodyNode& sum = add.children[1];
  CHECK(sum.kind == BodyKind::Call);
  CHECK(sum.keys == std::vector<std::string>{"", "axis", "keepdims"});
  CHECK(sum.children[1].number == -1);
  // Statements may follow each other without ';', and '1...' still lexes as INT.
  CHECK(parseBody("a = x b = a * 2").statements().size() == 2);
  CHECK(parseBody("a, b = pair").statements()[0].targets.size() == 2);
}

TEST_CASE("body syntax and name errors point at their column", "[body]") {
  Failure unknown = parseFailure("result = sqr(x)");
  CHECK(unknown.column == 10);
  CHECK_THAT(unknown.message,
             Catch::Matchers::StartsWith("unknown function 'sqr'; known functions: abs, ") &&
                 Catch::Matchers::Contains(", cast, ") && Catch::Matchers::Contains(", concat, "));
  Failure key = parseFailure("result = sum(x, axes=0)");
  CHECK(key.column == 17);
  CHECK(key.message == "sum() has no argument 'axes' (its arguments: x, axis, keepdims)");
  Failure positional = parseFailure("result = sum(x, axis=0, true)");
  CHECK(positional.column == 25);
  CHECK(positional.message == "a positional argument cannot follow a keyword argument");
  Failure missing = parseFailure("result = reshape(x)");
  CHECK(missing.column == 10);
  CHECK_THAT(missing.message, Catch::Matchers::StartsWith("reshape() needs argument 'shape'"));
  Failure twice = parseFailure("a, a = x");
  CHECK(twice.column == 4);
  CHECK(twice.message == "'a' is named twice");
  Failure syntax = parseFailure("result = x +");
  CHECK(syntax.column == 13);
  Failure noTarget = parseFailure("x * 2");
  CHECK(noTarget.column == 3);
}

TEST_CASE("bodies broadcast like NumPy and reduce with axis and keepdims", "[body]") {
  Env e;
  e.env.inputs.emplace("x", block({2, 3}, {1, 2, 3, 4, 5, 6}));
  e.env.inputs.emplace("b", block({3}, {10, 20, 30}));
  auto out = e.run("y = x + b; s = sum(x, axis=-1, keepdims=true); m = mean(x); "
                   "z = max(x, axis=0) - min(x, axis=[0]); r = x / s");
  CHECK(hostValues(out.at("y")) == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK(out.at("s").type.shape == Shape{2, 1});
  CHECK(hostValues(out.at("s")) == std::vector<double>{6, 15});
  CHECK(out.at("m").type.shape.empty());
  CHECK(hostValues(out.at("m")).at(0) == Approx(3.5));
  CHECK(hostValues(out.at("z")) == std::vector<double>{3, 3, 3});
  CHECK(hostValues(out.at("r")).at(5) == Approx(6.0 / 15.0));
}

TEST_CASE("bodies: matrix products, transpose, reshape, cast, concat, slice", "[body]") {
  Env e;
  e.env.inputs.emplace("a", block({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}));
  e.env.inputs.emplace("w", block({3, 1}, {1, 10, 100}));
  auto out = e.run("p = a @ w; t = transpose(a, perm=[0, 2, 1]); r = reshape(a, shape=[-1, 3]); "
                   "k = reshape(a, shape=[0, 0, -1, 1]); "
                   "c = concat([w, w], axis=1); s = slice(a, axis=2, start=1, stop=-1); "
                   "q = cast(a * 2.6, int32)");
  CHECK(out.at("p").type.shape == Shape{2, 2, 1}); // w broadcasts over the batch
  CHECK(hostValues(out.at("p")) == std::vector<double>{321, 654, 1, 10});
  CHECK(out.at("t").type.shape == Shape{2, 3, 2});
  CHECK(hostValues(out.at("t")) == std::vector<double>{1, 4, 2, 5, 3, 6, 1, 0, 0, 1, 0, 0});
  CHECK(out.at("r").type.shape == Shape{4, 3});
  CHECK(out.at("k").type.shape == Shape{2, 2, 3, 1}); // a 0 keeps the input's dim, as in ONNX
  CHECK(hostValues(out.at("k")) == hostValues(e.env.inputs.at("a")));
  CHECK(hostValues(out.at("c")) == std::vector<double>{1, 1, 10, 10, 100, 100});
  CHECK(hostValues(out.at("s")) == std::vector<double>{2, 5, 0, 1});
  CHECK(out.at("q").type.dtype == "int32");
  CHECK(hostValues(out.at("q")).at(1) == 5); // 5.2 truncates
}

TEST_CASE("bodies read bindings and float params, types only needs no data", "[body]") {
  Env e;
  e.bindings.bind("n", Value(4), "params");
  e.bindings.bind("flag", Value(true), "params");
  e.env.numbers["eps"] = 0.5;
  e.env.numeric = false;
  e.env.inputs.emplace("x", BodyValue::block(BlockType{{5, 4}, "float32"}));
  auto out = e.run("y = sum(x, axis=-1, keepdims=$flag) / $n + $eps");
  CHECK(out.at("y").type == BlockType{{5, 1}, "float32"});
  CHECK(out.at("y").data == nullptr);
}

TEST_CASE("body evaluation errors say what and where", "[body]") {
  Env e;
  e.env.inputs.emplace("x", block({2, 3}, {1, 2, 3, 4, 5, 6}));
  e.env.inputs.emplace("v", block({4}, {1, 2, 3, 4}));
  e.env.inputs.emplace("i", block({2}, {1, 2}, "int32"));
  e.bindings.bind("perm", Value::ints({1, 0}), "params");
  Failure bc = e.fail("y = x + v");
  CHECK(bc.column == 7);
  CHECK(bc.message == "'+' cannot broadcast [2, 3] with [4]");
  Failure inner = e.fail("y = x @ v");
  CHECK(inner.message == "'@' of [2, 3] and [4]: inner dims 3 and 4 differ");
  Failure list = e.fail("y = x / $perm");
  CHECK(list.column == 9);
  CHECK(list.message == "'/' needs blocks or numbers, got a list");
  Failure axis = e.fail("y = sum(x, axis=2)");
  CHECK(axis.column == 17);
  CHECK(axis.message == "axis 2 is out of range for a block of rank 2");
  Failure name = e.fail("y = z * 2");
  CHECK(name.column == 5);
  CHECK_THAT(name.message, Catch::Matchers::StartsWith("unknown name 'z' (blocks here: i, v, x"));
  Failure var = e.fail("y = x * $nope");
  CHECK(var.message == "unknown variable $nope");
  Failure ints = e.fail("y = exp(i)");
  CHECK(ints.message == "exp() needs a float block, got [2] int32 (cast it first)");
  Failure idiv = e.fail("y = i / i");
  CHECK_THAT(idiv.message, Catch::Matchers::StartsWith("'/' of int32 blocks"));
  Failure mixed = e.fail("y = x + cast(x, float32)");
  CHECK_THAT(mixed.message, Catch::Matchers::StartsWith("'+' of a float64 block and a float32"));
  Failure reshape = e.fail("y = reshape(x, shape=[4, 2])");
  CHECK(reshape.message == "reshape(): a block [2, 3] float64 has 6 elements, shape [4, 2] has 8");
  Failure keep = e.fail("y = reshape(x, shape=[3, 2, 0])");
  CHECK(keep.message == "reshape(): shape [3, 2, 0] has a 0 at 2 (keep that dim) but the block "
                        "[2, 3] float64 has no dim 2");
  Failure perm = e.fail("y = transpose(x, perm=[0, 0])");
  CHECK(perm.message == "transpose(): perm [0, 0] is not a permutation");
  Failure input = e.fail("x = v");
  CHECK(input.column == 1);
  CHECK(input.message == "'x' is an input block; give the result another name");
  Failure pair = e.fail("a, b = x");
  CHECK(pair.message == "2 names but the value is a block [2, 3] float64");
}

TEST_CASE("bodies: pow() and where() broadcast over every operand", "[body]") {
  Env e;
  e.env.inputs.emplace("x", block({2, 3}, {1, 2, 3, 4, 5, 6}));
  e.env.inputs.emplace("p", block({3}, {0, 0.5, 2}));
  e.env.inputs.emplace("c", block({2, 1}, {1, 0}, "bool"));
  e.env.numbers["v"] = 3;
  auto out = e.run("a = pow(x, p); b = pow(2, x); s = pow(a=x, b=$v); "
                   "w = where(c, x, -x); t = where(c, p, 0); u = where(true, 1, 2); "
                   "k = where(condition=c, a=x, b=pow(x, 2))");
  CHECK(out.at("a").type == BlockType{{2, 3}, "float64"});
  CHECK(hostValues(out.at("a")).at(1) == Approx(std::sqrt(2.0)));
  CHECK(hostValues(out.at("a")).at(5) == 36);
  CHECK(hostValues(out.at("b")) == std::vector<double>{2, 4, 8, 16, 32, 64});
  CHECK(hostValues(out.at("s")).at(3) == 64);
  CHECK(hostValues(out.at("w")) == std::vector<double>{1, 2, 3, -4, -5, -6});
  CHECK(out.at("t").type == BlockType{{2, 3}, "float64"}); // [2, 1] x [3] x []
  CHECK(hostValues(out.at("t")) == std::vector<double>{0, 0.5, 2, 0, 0, 0});
  CHECK(out.at("u").kind == BodyValue::Kind::Number);
  CHECK(out.at("u").number == 1);
  CHECK(hostValues(out.at("k")) == std::vector<double>{1, 2, 3, 16, 25, 36});
  // Types only: the same shapes and dtypes, no data.
  e.env.numeric = false;
  e.env.inputs.clear();
  e.env.inputs.emplace("x", BodyValue::block(BlockType{{4, 1, 5}, "float16"}));
  e.env.inputs.emplace("c", BodyValue::block(BlockType{{3, 1}, "bool"}));
  auto types = e.run("r = where(c, pow(x, 2), x)");
  CHECK(types.at("r").type == BlockType{{4, 3, 5}, "float16"});
  CHECK(types.at("r").data == nullptr);
}

TEST_CASE("pow() and where() errors say what and where", "[body]") {
  Env e;
  e.env.inputs.emplace("x", block({2, 3}, {1, 2, 3, 4, 5, 6}));
  e.env.inputs.emplace("v", block({4}, {1, 2, 3, 4}));
  e.env.inputs.emplace("i", block({3}, {1, 2, 3}, "int32"));
  e.env.inputs.emplace("c", block({2, 1}, {1, 0}, "bool"));
  e.bindings.bind("perm", Value::ints({1, 0}), "params");
  Failure bc = e.fail("y = pow(x, v)");
  CHECK(bc.column == 5);
  CHECK(bc.message == "pow() cannot broadcast [2, 3] with [4]");
  Failure list = e.fail("y = pow(x, $perm)");
  CHECK(list.column == 12);
  CHECK(list.message == "pow() needs blocks or numbers, got a list");
  Failure mixed = e.fail("y = pow(x, cast(x, float32))");
  CHECK_THAT(mixed.message, Catch::Matchers::StartsWith("pow() of a float64 block and a float32"));
  Failure frac = e.fail("y = pow(i, 0.5)");
  CHECK(frac.column == 12);
  CHECK(frac.message == "a fractional number with a int32 block");
  Failure cond = e.fail("y = where(x, x, x)");
  CHECK(cond.column == 11);
  CHECK(cond.message == "where(): condition must be a bool block or true/false, got a block "
                        "[2, 3] float64");
  Failure notBool = e.fail("y = where(1, x, x)");
  CHECK(notBool.message == "where(): condition must be a bool block or true/false, got a number");
  Failure side = e.fail("y = where(c, x, $perm)");
  CHECK(side.column == 17);
  CHECK(side.message == "where(): a and b must be blocks or numbers, got a list");
  Failure dt = e.fail("y = where(c, x, i)");
  CHECK(dt.column == 5);
  CHECK_THAT(dt.message, Catch::Matchers::StartsWith("where() of a float64 block and a int32"));
  Failure shape = e.fail("y = where(c, x, v)");
  CHECK(shape.message == "where() cannot broadcast [2, 1], [2, 3] and [4]");
  Failure scalars = e.fail("y = where(c, 1, 2)");
  CHECK(scalars.message == "where(): a or b must be a block, to give the result its dtype");
  Failure arity = parseFailure("y = where(c, x)");
  CHECK(arity.column == 5);
  CHECK_THAT(arity.message, Catch::Matchers::StartsWith("where() needs argument 'b'"));
}
