// Tests for the standard library of metakernels (metakernels/*.yaml, SPEC §4.3):
// per kernel, bindings, output shapes/dtypes, IPFs, reduction dims and flops for
// several shapes; bad inputs with their messages; and a fixed-seed property test
// that the IPFs of random valid applications tile every output exactly and keep
// every input read inside its tensor (docs/metakernels-design.md).
//
// Longer than 800 lines on purpose: tests/unit keeps one file per module, and
// this module's cases read best side by side (each is short and independent).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/json/json.hpp"
#include "core/metakernel/application.hpp"
#include "core/metakernel/library.hpp"
#include "core/metakernel/metakernel.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/zaffine_map.hpp"
#include "core/zspace/zrange.hpp"

using namespace tapestry;
using namespace tapestry::metakernel;
using Catch::Matchers::Contains;

namespace {

using Ints = std::vector<std::int64_t>;
using Inputs = std::vector<std::pair<std::string, std::vector<TensorType>>>;

const MetakernelLibrary& lib() {
  static const MetakernelLibrary library = MetakernelLibrary::standard();
  return library;
}

TensorType T(Ints shape, std::string dtype = "float32") {
  return {std::move(shape), std::move(dtype)};
}

Application run(const std::string& kernel, const Inputs& inputs, Json params = Json::object()) {
  Operation op;
  op.name = kernel;
  for (const auto& [port, tensors] : inputs) {
    op.inputs[port] = tensors;
  }
  op.params = std::move(params);
  return apply(lib().get(kernel), op);
}

// The message of the Error `run` throws, or "" when it succeeds.
std::string errorOf(const std::string& kernel, const Inputs& inputs, Json params = Json::object()) {
  try {
    run(kernel, inputs, std::move(params));
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

std::int64_t bindInt(const Application& a, const std::string& name) {
  const expr::Binding* b = a.bindings.find(name);
  REQUIRE(b != nullptr);
  REQUIRE(b->value.isInt());
  return b->value.asInt();
}

Ints bindInts(const Application& a, const std::string& name) {
  const expr::Binding* b = a.bindings.find(name);
  REQUIRE(b != nullptr);
  return b->value.toInts(name);
}

IndexProjection ipf(std::initializer_list<std::initializer_list<std::int64_t>> rows, Ints offset,
                    Ints shape) {
  return IndexProjection(ZAffineMap(ZMatrix(rows), ZPoint(std::move(offset))),
                         ZPoint(std::move(shape)));
}

const IndexProjection& inIpf(const Application& a, const std::string& port, std::size_t k = 0) {
  const PortResult* p = a.input(port);
  REQUIRE(p != nullptr);
  REQUIRE(k < p->ipfs.size());
  return p->ipfs[k];
}

const IndexProjection& outIpf(const Application& a, const std::string& port, std::size_t k = 0) {
  const PortResult* p = a.output(port);
  REQUIRE(p != nullptr);
  REQUIRE(k < p->ipfs.size());
  return p->ipfs[k];
}

const TensorType& outT(const Application& a, const std::string& port = "result",
                       std::size_t k = 0) {
  const PortResult* p = a.output(port);
  REQUIRE(p != nullptr);
  REQUIRE(k < p->tensors.size());
  return p->tensors[k];
}

Ints indexShape(const Application& a) {
  return a.index.shape().vector();
}

std::vector<std::size_t> dims(std::initializer_list<std::size_t> d) {
  return d;
}

} // namespace

// ---------------------------------------------------------------- library

TEST_CASE("stdlib: every SPEC §4.3 kernel is in the embedded library", "[stdlib]") {
  for (const char* name :
       {"matmul",    "linear",    "add",     "sub",   "mul",     "div",    "relu",      "gelu",
        "tanh",      "exp",       "sigmoid", "neg",   "sum",     "mean",   "max",       "softmax",
        "layernorm", "transpose", "concat",  "split", "reshape", "conv2d", "embedding", "cast"}) {
    INFO(name);
    const Metakernel* k = lib().find(name);
    REQUIRE(k != nullptr);
    CHECK_FALSE(k->doc.empty());
    CHECK(k->examples.size() >= 1);
    CHECK(k->examples.size() <= 3);
  }
}

TEST_CASE("stdlib: every kernel has a body, or its doc says why not", "[stdlib][body]") {
  // Which kernels have a body is part of the contract (docs/reference/kernels.md);
  // test_cpu_kernels runs each body against its native kernel.
  const std::vector<std::string> without = {
      "conv2d",  "conv2d_act", "conv2d_grouped", "conv2d_grouped_act", "linear_act", "embedding",
      "reshape", "split",      "maxpool2d",      "avgpool2d",          "gather"};
  std::size_t bodies = 0;
  for (const Metakernel* k : lib().kernels()) {
    INFO(k->name);
    const bool none = std::find(without.begin(), without.end(), k->name) != without.end();
    CHECK(static_cast<bool>(k->body) == !none);
    if (none) {
      CHECK(k->doc.find("No body: ") != std::string::npos);
    } else {
      ++bodies;
    }
  }
  CHECK(bodies == 93);
}

TEST_CASE("stdlib: every example applies", "[stdlib]") {
  for (const Metakernel* k : lib().kernels()) {
    for (const ExampleSpec& ex : k->examples) {
      INFO(k->name << " example at line " << ex.location.line);
      Operation op;
      op.name = k->name;
      for (const auto& [port, tensors] : ex.inputs) {
        op.inputs[port] = tensors;
      }
      op.params = ex.params;
      if (ex.expectError) {
        std::string message;
        try {
          apply(*k, op);
        } catch (const Error& e) {
          message = e.message();
        }
        CHECK_THAT(message, Contains(*ex.expectError));
        continue;
      }
      Application a = apply(*k, op);
      if (ex.expectIndex) {
        CHECK(indexShape(a) == *ex.expectIndex);
      }
      if (ex.expectFlops) {
        CHECK(a.flops == *ex.expectFlops);
      }
      for (const auto& [port, tensors] : ex.expectOutputs) {
        const PortResult* p = a.output(port);
        REQUIRE(p != nullptr);
        CHECK(p->tensors == tensors);
      }
    }
  }
}

// ---------------------------------------------------------------- matmul, linear

TEST_CASE("stdlib: matmul", "[stdlib]") {
  SECTION("2-D") {
    Application a = run("matmul", {{"X", {T({8, 4})}}, {"W", {T({4, 6})}}});
    CHECK(bindInt(a, "m") == 8);
    CHECK(bindInt(a, "k") == 4);
    CHECK(bindInt(a, "n") == 6);
    CHECK(bindInts(a, "batch").empty());
    CHECK(indexShape(a) == Ints{8, 6, 4});
    CHECK(outT(a) == T({8, 6}));
    CHECK(inIpf(a, "X") == ipf({{1, 0, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
    CHECK(inIpf(a, "W") == ipf({{0, 0, 1}, {0, 1, 0}}, {0, 0}, {1, 1}));
    CHECK(outIpf(a, "result") == ipf({{1, 0, 0}, {0, 1, 0}}, {0, 0}, {1, 1}));
    CHECK(a.reductionDims == dims({2}));
    CHECK(a.reductionSplittable);
    REQUIRE(a.output("result")->combine.has_value());
    CHECK(*a.output("result")->combine == Combine::Sum);
    CHECK(a.flopsPerPoint == 2);
    CHECK(a.flops == 2 * 8 * 6 * 4);
  }
  SECTION("batched, int64") {
    Application a =
        run("matmul", {{"X", {T({2, 3, 5, 7}, "int64")}}, {"W", {T({2, 3, 7, 4}, "int64")}}});
    CHECK(bindInts(a, "batch") == Ints{2, 3});
    CHECK(indexShape(a) == Ints{2, 3, 5, 4, 7});
    CHECK(outT(a) == T({2, 3, 5, 4}, "int64"));
    CHECK(inIpf(a, "W") == ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}},
                               {0, 0, 0, 0}, {1, 1, 1, 1}));
    CHECK(a.reductionDims == dims({4}));
  }
  SECTION("batch dims broadcast like NumPy") {
    // x[B, S, D] @ W[D, F]: W's missing batch dims read element 0.
    Application a = run("matmul", {{"X", {T({2, 3, 5})}}, {"W", {T({5, 4})}}});
    CHECK(bindInts(a, "batch") == Ints{2});
    CHECK(indexShape(a) == Ints{2, 3, 4, 5});
    CHECK(outT(a) == T({2, 3, 4}));
    CHECK(inIpf(a, "X") == ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 1}}, {0, 0, 0}, {1, 1, 1}));
    CHECK(inIpf(a, "W") == ipf({{0, 0, 0, 1}, {0, 0, 1, 0}}, {0, 0}, {1, 1}));
    CHECK(a.reductionDims == dims({3}));
    // [1, H, S, D] @ [B, H, D, S]: X's size-1 batch dim is a constant-0 row.
    Application b = run("matmul", {{"X", {T({1, 2, 3, 4})}}, {"W", {T({5, 2, 4, 3})}}});
    CHECK(indexShape(b) == Ints{5, 2, 3, 3, 4});
    CHECK(outT(b) == T({5, 2, 3, 3}));
    CHECK(inIpf(b, "X") == ipf({{0, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}},
                               {0, 0, 0, 0}, {1, 1, 1, 1}));
    // [B, S, D] @ [B, 1, D, F] (X has fewer dims, W a size-1 one).
    Application c = run("matmul", {{"X", {T({3, 2, 4})}}, {"W", {T({2, 1, 4, 5})}}});
    CHECK(outT(c) == T({2, 3, 2, 5}));
    CHECK(inIpf(c, "W") == ipf({{1, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}},
                               {0, 0, 0, 0}, {1, 1, 1, 1}));
  }
  SECTION("transposed operands: the same index space, IPFs that read the swapped dims") {
    // X stored [k, m] = [4, 8], W stored [n, k] = [6, 4]: index [m, n, k] = [8, 6, 4].
    Application a = run("matmul", {{"X", {T({4, 8})}}, {"W", {T({6, 4})}}},
                        Json{{"transpose_x", true}, {"transpose_w", true}});
    CHECK(bindInt(a, "m") == 8);
    CHECK(bindInt(a, "k") == 4);
    CHECK(bindInt(a, "n") == 6);
    CHECK(indexShape(a) == Ints{8, 6, 4});
    CHECK(outT(a) == T({8, 6}));
    CHECK(inIpf(a, "X") == ipf({{0, 0, 1}, {1, 0, 0}}, {0, 0}, {1, 1}));
    CHECK(inIpf(a, "W") == ipf({{0, 1, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
    CHECK(a.reductionDims == dims({2}));
    // Batched X [2, 3, k=5, m=7] transposed, W [5, 4] broadcast: index [2, 3, 7, 4, 5].
    Application b =
        run("matmul", {{"X", {T({2, 3, 5, 7})}}, {"W", {T({5, 4})}}}, Json{{"transpose_x", true}});
    CHECK(indexShape(b) == Ints{2, 3, 7, 4, 5});
    CHECK(inIpf(b, "X") == ipf({{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 1, 0, 0}},
                               {0, 0, 0, 0}, {1, 1, 1, 1}));
    CHECK(bindInts(b, "perm_x") == Ints{0, 1, 3, 2});
    CHECK(bindInts(b, "perm_w") == Ints{0, 1});
  }
  SECTION("bad inputs") {
    const std::string kMismatch =
        "matmul: X and W disagree on k (X is [..., m, k], or [..., k, m] with transpose_x; W is "
        "[..., k, n], or [..., n, k] with transpose_w)";
    CHECK(errorOf("matmul", {{"X", {T({8, 4})}}, {"W", {T({5, 6})}}}) ==
          kMismatch + " ($k = 4, $k_w = 5)");
    // Shapes that agree untransposed disagree once a param swaps a pair.
    CHECK(errorOf("matmul", {{"X", {T({8, 4})}}, {"W", {T({4, 6})}}},
                  Json{{"transpose_x", true}}) == kMismatch + " ($k = 8, $k_w = 4)");
    CHECK(errorOf("matmul", {{"X", {T({8, 4})}}, {"W", {T({4, 6})}}},
                  Json{{"transpose_w", true}}) == kMismatch + " ($k = 4, $k_w = 6)");
    CHECK(errorOf("matmul", {{"X", {T({8, 4})}}, {"W", {T({4, 6})}}}, Json{{"transpose_w", 1}}) ==
          "matmul: param transpose_w: expected bool, got int");
    CHECK(errorOf("matmul", {{"X", {T({2, 3, 5, 7})}}, {"W", {T({4, 3, 7, 11})}}}) ==
          "matmul: in let expression \"broadcast($bx, $bw)\": cannot broadcast [2, 3] with [4, 3] "
          "at column 1");
    CHECK_THAT(errorOf("matmul", {{"X", {T({2, 8, 4})}}, {"W", {T({3, 4, 6})}}}),
               Contains("cannot broadcast [2] with [3]"));
    CHECK_THAT(errorOf("matmul", {{"X", {T({8})}}, {"W", {T({8, 6})}}}),
               Contains("expects rank at least 2"));
    CHECK_THAT(errorOf("matmul", {{"X", {T({8, 4})}}, {"W", {T({4, 6}, "float64")}}}),
               Contains("$dtype is float32 from X but float64 from W"));
    CHECK_THAT(errorOf("matmul", {{"X", {T({8, 4}, "bool")}}, {"W", {T({4, 6}, "bool")}}}),
               Contains("$dtype is bool from X, expected one of"));
  }
}

TEST_CASE("stdlib: linear", "[stdlib]") {
  SECTION("2-D") {
    Application a = run("linear", {{"X", {T({8, 4})}}, {"W", {T({4, 6})}}, {"bias", {T({6})}}});
    CHECK(indexShape(a) == Ints{8, 6});
    CHECK(outT(a) == T({8, 6}));
    CHECK(inIpf(a, "X") == ipf({{1, 0}, {0, 0}}, {0, 0}, {1, 4}));
    CHECK(inIpf(a, "W") == ipf({{0, 0}, {0, 1}}, {0, 0}, {4, 1}));
    CHECK(inIpf(a, "bias") == ipf({{0, 1}}, {0}, {1}));
    CHECK(outIpf(a, "result") == ipf({{1, 0}, {0, 1}}, {0, 0}, {1, 1}));
    CHECK(a.reductionDims.empty());
    CHECK_FALSE(a.output("result")->combine.has_value());
    CHECK(a.flopsPerPoint == 2 * 4 + 1);
    CHECK(a.flops == 9 * 8 * 6);
  }
  SECTION("batched and 1-D") {
    Application a = run("linear", {{"X", {T({2, 3, 4}, "bfloat16")}},
                                   {"W", {T({4, 5}, "bfloat16")}},
                                   {"bias", {T({5}, "bfloat16")}}});
    CHECK(indexShape(a) == Ints{2, 3, 5});
    CHECK(outT(a) == T({2, 3, 5}, "bfloat16"));
    CHECK(inIpf(a, "X") == ipf({{1, 0, 0}, {0, 1, 0}, {0, 0, 0}}, {0, 0, 0}, {1, 1, 4}));
    Application v = run("linear", {{"X", {T({4})}}, {"W", {T({4, 5})}}, {"bias", {T({5})}}});
    CHECK(indexShape(v) == Ints{5});
    CHECK(inIpf(v, "X") == ipf({{0}}, {0}, {4}));
  }
  SECTION("transposed operands (ONNX Gemm's transA, transB)") {
    // X stored [k, m] = [4, 8], W stored [n, k] = [6, 4]: index [m, n] = [8, 6].
    Application a = run("linear", {{"X", {T({4, 8})}}, {"W", {T({6, 4})}}, {"bias", {T({6})}}},
                        Json{{"transpose_x", true}, {"transpose_w", true}});
    CHECK(indexShape(a) == Ints{8, 6});
    CHECK(bindInt(a, "k") == 4);
    CHECK(inIpf(a, "X") == ipf({{0, 0}, {1, 0}}, {0, 0}, {4, 1}));
    CHECK(inIpf(a, "W") == ipf({{0, 1}, {0, 0}}, {0, 0}, {1, 4}));
    CHECK(a.flopsPerPoint == 2 * 4 + 1);
    // Batched: X [2, k=4, m=3] -> index [2, 3, n].
    Application b = run("linear", {{"X", {T({2, 4, 3})}}, {"W", {T({4, 5})}}, {"bias", {T({5})}}},
                        Json{{"transpose_x", true}});
    CHECK(indexShape(b) == Ints{2, 3, 5});
    CHECK(inIpf(b, "X") == ipf({{1, 0, 0}, {0, 0, 0}, {0, 1, 0}}, {0, 0, 0}, {1, 4, 1}));
    CHECK(inIpf(b, "W") == ipf({{0, 0, 0}, {0, 0, 1}}, {0, 0}, {4, 1}));
  }
  SECTION("bad inputs") {
    CHECK(errorOf("linear", {{"X", {T({8, 4})}}, {"W", {T({4, 6})}}, {"bias", {T({5})}}}) ==
          "linear: W and bias disagree on n (W is [k, n], or [n, k] with transpose_w; bias is "
          "[n]) ($n_w = 6, $n = 5)");
    CHECK(errorOf("linear", {{"X", {T({8, 4})}}, {"W", {T({4, 6})}}, {"bias", {T({6})}}},
                  Json{{"transpose_w", true}}) ==
          "linear: X and W disagree on k (X is [..., k], or [..., k, m] with transpose_x; W is "
          "[k, n], or [n, k] with transpose_w) ($k = 4, $k_w = 6)");
    CHECK(errorOf("linear", {{"X", {T({4})}}, {"W", {T({4, 6})}}, {"bias", {T({6})}}},
                  Json{{"transpose_x", true}}) ==
          "linear: transpose_x needs X of rank 2 or more ([..., k, m]) ($transpose_x = true, $bx "
          "= [])");
    CHECK_THAT(errorOf("linear", {{"X", {T({8, 4}, "int32")}},
                                  {"W", {T({4, 6}, "int32")}},
                                  {"bias", {T({6}, "int32")}}}),
               Contains("expected one of: float32"));
  }
}

// ---------------------------------------------------------------- elementwise

TEST_CASE("stdlib: binary elementwise broadcasting", "[stdlib]") {
  for (const char* k : {"add", "sub", "mul", "div", "pow"}) {
    INFO(k);
    Application same = run(k, {{"A", {T({4, 5})}}, {"B", {T({4, 5})}}});
    CHECK(indexShape(same) == Ints{4, 5});
    CHECK(outT(same) == T({4, 5}));
    CHECK(inIpf(same, "A") == IndexProjection::identity(2));
    CHECK(inIpf(same, "B") == IndexProjection::identity(2));
    CHECK(outIpf(same, "result") == IndexProjection::identity(2));
    CHECK(same.reductionDims.empty());
    CHECK(same.flops == (std::string(k) == "pow" ? 80 : 20)); // pow: 4 per point

    Application b = run(k, {{"A", {T({8, 1, 5})}}, {"B", {T({3, 1})}}});
    CHECK(indexShape(b) == Ints{8, 3, 5});
    CHECK(outT(b) == T({8, 3, 5}));
    CHECK(inIpf(b, "A") == ipf({{1, 0, 0}, {0, 0, 0}, {0, 0, 1}}, {0, 0, 0}, {1, 1, 1}));
    CHECK(inIpf(b, "B") == ipf({{0, 1, 0}, {0, 0, 0}}, {0, 0}, {1, 1}));

    Application s = run(k, {{"A", {T({})}}, {"B", {T({2, 3})}}});
    CHECK(indexShape(s) == Ints{2, 3});
    CHECK(inIpf(s, "A").outputRank() == 0);

    CHECK_THAT(errorOf(k, {{"A", {T({4, 5})}}, {"B", {T({3, 5})}}}),
               Contains("cannot broadcast [4, 5] with [3, 5]"));
    CHECK_THAT(errorOf(k, {{"A", {T({4})}}, {"B", {T({4}, "float16")}}}),
               Contains("$dtype is float32 from A but float16 from B"));
  }
  CHECK(outT(run("add", {{"A", {T({3}, "int32")}}, {"B", {T({3}, "int32")}}})) == T({3}, "int32"));
  CHECK_THAT(errorOf("div", {{"A", {T({3}, "int32")}}, {"B", {T({3}, "int32")}}}),
             Contains("$dtype is int32 from A, expected one of"));
  CHECK_THAT(errorOf("pow", {{"A", {T({3}, "int64")}}, {"B", {T({3}, "int64")}}}),
             Contains("$dtype is int64 from A, expected one of"));
  CHECK(run("pow", {{"A", {T({10})}}, {"B", {T({1})}}}).flops == 40);
}

TEST_CASE("stdlib: unary elementwise", "[stdlib]") {
  for (const char* k : {"relu", "gelu", "tanh", "exp", "sigmoid", "neg"}) {
    INFO(k);
    Application a = run(k, {{"input", {T({2, 3, 4}, "float16")}}});
    CHECK(indexShape(a) == Ints{2, 3, 4});
    CHECK(outT(a) == T({2, 3, 4}, "float16"));
    CHECK(inIpf(a, "input") == IndexProjection::identity(3));
    CHECK(outIpf(a, "result") == IndexProjection::identity(3));
    CHECK(a.reductionDims.empty());
    CHECK(a.flopsPerPoint >= 1);
    Application s = run(k, {{"input", {T({})}}});
    CHECK(s.index.rank() == 0);
    CHECK(outT(s) == T({}));
  }
  CHECK(run("gelu", {{"input", {T({10})}}}).flops == 80);
  CHECK(outT(run("neg", {{"input", {T({3}, "int64")}}})) == T({3}, "int64"));
  CHECK_THAT(errorOf("exp", {{"input", {T({3}, "int64")}}}),
             Contains("$dtype is int64 from input, expected one of"));
}

TEST_CASE("stdlib: ONNX unary, clip and scalar kernels", "[stdlib]") {
  for (const char* k : {"erf", "sqrt", "reciprocal", "log", "abs", "clip", "add_scalar",
                        "mul_scalar", "rsub_scalar", "rdiv_scalar", "div_scalar", "pow_scalar"}) {
    INFO(k);
    Application a = run(k, {{"input", {T({2, 3, 4}, "bfloat16")}}});
    CHECK(indexShape(a) == Ints{2, 3, 4});
    CHECK(outT(a) == T({2, 3, 4}, "bfloat16"));
    CHECK(inIpf(a, "input") == IndexProjection::identity(3));
    CHECK(outIpf(a, "result") == IndexProjection::identity(3));
    CHECK(a.reductionDims.empty());
    CHECK(a.flopsPerPoint >= 1);
    CHECK(a.body != nullptr);
    Application s = run(k, {{"input", {T({})}}});
    CHECK(s.index.rank() == 0);
    if (std::string(k) != "abs") {
      CHECK_THAT(errorOf(k, {{"input", {T({3}, "int32")}}}),
                 Contains("$dtype is int32 from input, expected one of"));
    }
  }
  CHECK(outT(run("abs", {{"input", {T({3}, "int64")}}})) == T({3}, "int64"));
  // Float params and their defaults reach the application (and so the backends).
  CHECK(run("clip", {{"input", {T({3})}}}).params["min"] == Json(-1.7976931348623157e308));
  CHECK(run("clip", {{"input", {T({3})}}}).params["max"] == Json(1.7976931348623157e308));
  Application relu6 = run("clip", {{"input", {T({3})}}}, {{"min", 0}, {"max", 6}});
  CHECK(relu6.params["max"] == Json(6));
  CHECK(relu6.params["max"].is_number_float()); // a float param given as an int is a float
  CHECK(relu6.params["min"].is_number_float());
  CHECK(run("add_scalar", {{"input", {T({3})}}}).params["value"] == Json(0));
  CHECK(run("rsub_scalar", {{"input", {T({3})}}}).params["value"] == Json(0));
  for (const char* k : {"mul_scalar", "rdiv_scalar", "div_scalar", "pow_scalar"}) {
    CHECK(run(k, {{"input", {T({3})}}}).params["value"] == Json(1));
  }
  CHECK_THAT(errorOf("mul_scalar", {{"input", {T({3})}}}, {{"value", "two"}}),
             Contains("param value: expected float, got string"));
  CHECK(run("pow_scalar", {{"input", {T({10})}}}).flops == 40);
}

TEST_CASE("stdlib: where broadcasts condition, X and Y", "[stdlib]") {
  Application a = run("where", {{"condition", {T({8, 1, 1}, "bool")}},
                                {"X", {T({3, 1}, "int64")}},
                                {"Y", {T({5}, "int64")}}});
  CHECK(indexShape(a) == Ints{8, 3, 5});
  CHECK(outT(a) == T({8, 3, 5}, "int64"));
  CHECK(inIpf(a, "condition") == ipf({{1, 0, 0}, {0, 0, 0}, {0, 0, 0}}, {0, 0, 0}, {1, 1, 1}));
  CHECK(inIpf(a, "X") == ipf({{0, 1, 0}, {0, 0, 0}}, {0, 0}, {1, 1}));
  CHECK(inIpf(a, "Y") == ipf({{0, 0, 1}}, {0}, {1}));
  CHECK(outIpf(a, "result") == IndexProjection::identity(3));
  CHECK(a.reductionDims.empty());
  CHECK(a.body != nullptr);
  CHECK_THAT(
      errorOf("where", {{"condition", {T({4}, "float32")}}, {"X", {T({4})}}, {"Y", {T({4})}}}),
      Contains("$cdtype is float32 from condition, expected one of"));
  CHECK_THAT(
      errorOf("where",
              {{"condition", {T({4}, "bool")}}, {"X", {T({4})}}, {"Y", {T({4}, "float16")}}}),
      Contains("$dtype is float32 from X but float16 from Y"));
  CHECK_THAT(errorOf("where", {{"condition", {T({3}, "bool")}}, {"X", {T({4})}}, {"Y", {T({4})}}}),
             Contains("cannot broadcast [3] with [4]"));
}

// ---------------------------------------------------------------- reductions

TEST_CASE("stdlib: argmax and argmin read the whole axis and give int64", "[stdlib]") {
  for (const char* k : {"argmax", "argmin"}) {
    INFO(k);
    Application a = run(k, {{"input", {T({4, 6, 5})}}}, {{"axis", 1}});
    CHECK(indexShape(a) == Ints{4, 5});
    CHECK(outT(a) == T({4, 1, 5}, "int64"));
    CHECK(a.reductionDims.empty()); // the axis is not an index dim: never split
    CHECK(inIpf(a, "input") == ipf({{1, 0}, {0, 0}, {0, 1}}, {0, 0, 0}, {1, 6, 1}));
    CHECK(outIpf(a, "result") == ipf({{1, 0}, {0, 0}, {0, 1}}, {0, 0, 0}, {1, 1, 1}));
    Application b = run(k, {{"input", {T({3, 7}, "int32")}}},
                        {{"axis", -1}, {"keepdims", false}, {"select_last_index", true}});
    CHECK(indexShape(b) == Ints{3});
    CHECK(outT(b) == T({3}, "int64"));
    CHECK(b.flops == 3 * 7);
  }
}

TEST_CASE("stdlib: sum, mean, max, min, prod", "[stdlib]") {
  const std::map<std::string, Combine> combine = {{"sum", Combine::Sum},
                                                  {"mean", Combine::Sum},
                                                  {"max", Combine::Max},
                                                  {"min", Combine::Min},
                                                  {"prod", Combine::Prod}};
  for (const auto& [k, c] : combine) {
    INFO(k);
    Application a = run(k, {{"input", {T({4, 6, 5})}}});
    CHECK(bindInt(a, "ax") == 2);
    CHECK(bindInt(a, "n") == 5);
    CHECK(indexShape(a) == Ints{4, 6, 5});
    CHECK(outT(a) == T({4, 6}));
    CHECK(inIpf(a, "input") == IndexProjection::identity(3));
    CHECK(outIpf(a, "result") == ipf({{1, 0, 0}, {0, 1, 0}}, {0, 0}, {1, 1}));
    CHECK(a.reductionDims == dims({2}));
    CHECK(a.reductionSplittable);
    CHECK(*a.output("result")->combine == c);
    CHECK(a.flops == 4 * 6 * 5);

    Application b = run(k, {{"input", {T({4, 6, 5})}}}, {{"axis", 1}, {"keepdims", true}});
    CHECK(outT(b) == T({4, 1, 5}));
    CHECK(outIpf(b, "result") == ipf({{1, 0, 0}, {0, 0, 0}, {0, 0, 1}}, {0, 0, 0}, {1, 1, 1}));
    CHECK(b.reductionDims == dims({1}));

    Application n = run(k, {{"input", {T({4, 6, 5})}}}, {{"axis", -3}});
    CHECK(bindInt(n, "ax") == 0);
    CHECK(outT(n) == T({6, 5}));
    CHECK(n.reductionDims == dims({0}));

    Application v = run(k, {{"input", {T({7})}}});
    CHECK(outT(v) == T({}));
    CHECK(outIpf(v, "result").outputRank() == 0);
    CHECK(v.reductionDims == dims({0}));

    CHECK_THAT(errorOf(k, {{"input", {T({4, 6})}}}, {{"axis", 2}}),
               Contains("axis must be a dim of the input (from -rank to rank - 1) ($shape = "
                        "[4, 6], $axis = 2)"));
    CHECK_THAT(errorOf(k, {{"input", {T({4, 6})}}}, {{"axis", -3}}),
               Contains("axis must be a dim of the input"));
    CHECK_THAT(errorOf(k, {{"input", {T({})}}}),
               Contains("the input must have at least one dim ($shape = [])"));
    CHECK_THAT(errorOf(k, {{"input", {T({4})}}}, {{"axis", "x"}}),
               Contains("param axis: expected int, got string"));
    CHECK_THAT(errorOf(k, {{"input", {T({4})}}}, {{"keepdims", 1}}),
               Contains("param keepdims: expected bool"));
  }
  CHECK(outT(run("sum", {{"input", {T({3, 2}, "int32")}}})) == T({3}, "int32"));
  CHECK_THAT(errorOf("mean", {{"input", {T({3, 2}, "int32")}}}), Contains("expected one of"));
}

// ---------------------------------------------------------------- normalization

TEST_CASE("stdlib: softmax", "[stdlib]") {
  Application a = run("softmax", {{"input", {T({4, 10})}}});
  CHECK(bindInt(a, "n") == 10);
  CHECK(indexShape(a) == Ints{4});
  CHECK(outT(a) == T({4, 10}));
  CHECK(inIpf(a, "input") == ipf({{1}, {0}}, {0, 0}, {1, 10}));
  CHECK(outIpf(a, "result") == ipf({{1}, {0}}, {0, 0}, {1, 10}));
  CHECK(a.reductionDims.empty());
  CHECK(a.flops == 4 * 5 * 10);

  Application b = run("softmax", {{"input", {T({4, 10, 6})}}}, {{"axis", 1}});
  CHECK(indexShape(b) == Ints{4, 6});
  CHECK(outIpf(b, "result") == ipf({{1, 0}, {0, 0}, {0, 1}}, {0, 0, 0}, {1, 10, 1}));

  Application c = run("softmax", {{"input", {T({4, 10, 6})}}}, {{"axis", -3}});
  CHECK(indexShape(c) == Ints{10, 6});
  CHECK(inIpf(c, "input") == ipf({{0, 0}, {1, 0}, {0, 1}}, {0, 0, 0}, {4, 1, 1}));

  Application v = run("softmax", {{"input", {T({10})}}});
  CHECK(v.index.rank() == 0);
  CHECK(inIpf(v, "input").apply(v.index) == ZRange::fromShape(ZPoint{10}));

  CHECK_THAT(errorOf("softmax", {{"input", {T({4, 10})}}}, {{"axis", 2}}),
             Contains("axis must be a dim of the input"));
  CHECK_THAT(errorOf("softmax", {{"input", {T({4}, "int32")}}}), Contains("expected one of"));
}

TEST_CASE("stdlib: layernorm", "[stdlib]") {
  Application a =
      run("layernorm", {{"input", {T({4, 8})}}, {"gamma", {T({8})}}, {"beta", {T({8})}}},
          {{"eps", 1e-6}});
  CHECK(bindInt(a, "d") == 8);
  CHECK(indexShape(a) == Ints{4});
  CHECK(outT(a) == T({4, 8}));
  CHECK(inIpf(a, "input") == ipf({{1}, {0}}, {0, 0}, {1, 8}));
  CHECK(inIpf(a, "gamma") == ipf({{0}}, {0}, {8}));
  CHECK(inIpf(a, "beta") == ipf({{0}}, {0}, {8}));
  CHECK(outIpf(a, "result") == ipf({{1}, {0}}, {0, 0}, {1, 8}));
  CHECK(a.reductionDims.empty());
  CHECK(a.params["eps"] == 1e-6);
  CHECK(run("layernorm", {{"input", {T({4, 8})}}, {"gamma", {T({8})}}, {"beta", {T({8})}}})
            .params["eps"] == 1e-5);

  Application b =
      run("layernorm", {{"input", {T({2, 3, 8})}}, {"gamma", {T({8})}}, {"beta", {T({8})}}});
  CHECK(indexShape(b) == Ints{2, 3});
  Application v = run("layernorm", {{"input", {T({8})}}, {"gamma", {T({8})}}, {"beta", {T({8})}}});
  CHECK(v.index.rank() == 0);

  CHECK_THAT(
      errorOf("layernorm", {{"input", {T({4, 8})}}, {"gamma", {T({7})}}, {"beta", {T({8})}}}),
      Contains("$d is 8 from input but 7 from gamma"));
  CHECK_THAT(errorOf("layernorm", {{"input", {T({4, 8})}}, {"gamma", {T({8})}}, {"beta", {T({8})}}},
                     {{"eps", "small"}}),
             Contains("param eps: expected float"));
}

TEST_CASE("stdlib: rmsnorm", "[stdlib]") {
  Application a = run("rmsnorm", {{"input", {T({4, 8})}}, {"gamma", {T({8})}}}, {{"eps", 1e-5}});
  CHECK(bindInt(a, "d") == 8);
  CHECK(indexShape(a) == Ints{4});
  CHECK(outT(a) == T({4, 8}));
  CHECK(inIpf(a, "input") == ipf({{1}, {0}}, {0, 0}, {1, 8}));
  CHECK(inIpf(a, "gamma") == ipf({{0}}, {0}, {8}));
  CHECK(outIpf(a, "result") == ipf({{1}, {0}}, {0, 0}, {1, 8}));
  CHECK(a.reductionDims.empty());
  CHECK(a.params["eps"] == 1e-5);
  CHECK(run("rmsnorm", {{"input", {T({4, 8})}}, {"gamma", {T({8})}}}).params["eps"] == 1e-6);
  CHECK(indexShape(run("rmsnorm", {{"input", {T({2, 3, 8})}}, {"gamma", {T({8})}}})) == Ints{2, 3});
  CHECK(run("rmsnorm", {{"input", {T({8})}}, {"gamma", {T({8})}}}).index.rank() == 0);
  CHECK_THAT(errorOf("rmsnorm", {{"input", {T({4, 8})}}, {"gamma", {T({7})}}}),
             Contains("$d is 8 from input but 7 from gamma"));
  CHECK_THAT(errorOf("rmsnorm", {{"input", {T({4, 8}, "int32")}}, {"gamma", {T({8}, "int32")}}}),
             Contains("expected one of"));
}

// ---------------------------------------------------------------- shape kernels

TEST_CASE("stdlib: transpose", "[stdlib]") {
  Application a = run("transpose", {{"input", {T({2, 3, 4})}}}, {{"perm", {2, 0, 1}}});
  CHECK(bindInts(a, "p") == Ints{2, 0, 1});
  CHECK(indexShape(a) == Ints{2, 3, 4});
  CHECK(outT(a) == T({4, 2, 3}));
  CHECK(inIpf(a, "input") == IndexProjection::identity(3));
  CHECK(outIpf(a, "result") == ipf({{0, 0, 1}, {1, 0, 0}, {0, 1, 0}}, {0, 0, 0}, {1, 1, 1}));
  CHECK(a.flops == 0);

  Application n = run("transpose", {{"input", {T({2, 3})}}}, {{"perm", {-1, 0}}});
  CHECK(outT(n) == T({3, 2}));

  CHECK_THAT(errorOf("transpose", {{"input", {T({2, 3})}}}, {{"perm", {0}}}),
             Contains("perm must have one entry per dim of the input ($perm = [0], $shape = "
                      "[2, 3])"));
  CHECK_THAT(errorOf("transpose", {{"input", {T({2, 3})}}}, {{"perm", {0, 2}}}),
             Contains("perm entries must be dims of the input (from -rank to rank - 1)"));
  CHECK_THAT(errorOf("transpose", {{"input", {T({2, 3, 4})}}}, {{"perm", {0, 0, 2}}}),
             Contains("perm must be a permutation of the input's dims ($p = [0, 0, 2])"));
  CHECK_THAT(errorOf("transpose", {{"input", {T({2, 3})}}}, {{"perm", {1, -1}}}),
             Contains("perm must be a permutation of the input's dims ($p = [1, 1])"));
  CHECK_THAT(errorOf("transpose", {{"input", {T({2, 3})}}}),
             Contains("param perm: required ints param not given"));
}

namespace {

// Element j of a concat reads, for each index point, exactly the element the
// result gets there: after intersection with tensor j's bounds, every index point
// reads one element of one tensor, at the right place along the axis.
void checkConcatReads(const Application& a, std::int64_t ax) {
  const PortResult* in = a.input("tensors");
  REQUIRE(in != nullptr);
  a.index.forEachPoint([&](const ZPoint& p) {
    int readers = 0;
    std::int64_t start = 0;
    for (std::size_t j = 0; j < in->tensors.size(); ++j) {
      ZRange bounds = ZRange::fromShape(ZPoint(in->tensors[j].shape));
      ZRange r = bounds.intersection(in->ipfs[j].apply(p));
      std::int64_t extent = in->tensors[j].shape[static_cast<std::size_t>(ax)];
      bool inside = p[static_cast<std::size_t>(ax)] >= start &&
                    p[static_cast<std::size_t>(ax)] < start + extent;
      CHECK(r.isEmpty() == !inside);
      if (!r.isEmpty()) {
        ++readers;
        CHECK(r.size() == 1);
        ZPoint expected = p;
        std::vector<std::int64_t> e = expected.vector();
        e[static_cast<std::size_t>(ax)] -= start;
        CHECK(r.start() == ZPoint(e));
      }
      start += extent;
    }
    CHECK(readers == 1);
  });
}

} // namespace

TEST_CASE("stdlib: slice", "[stdlib]") {
  Application a = run("slice", {{"input", {T({6, 5, 4}, "int32")}}},
                      {{"starts", {1, 0, 2}}, {"ends", {4, 5, 3}}});
  CHECK(indexShape(a) == Ints{3, 5, 1});
  CHECK(outT(a) == T({3, 5, 1}, "int32"));
  CHECK(inIpf(a, "input") ==
        ipf({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {1, 0, 2}, {1, 1, 1})); // offset by starts
  CHECK(outIpf(a, "result") == IndexProjection::identity(3));
  CHECK(a.reductionDims.empty());
  CHECK(a.flops == 0);
  Application s =
      run("slice", {{"input", {T({})}}}, {{"starts", Json::array()}, {"ends", Json::array()}});
  CHECK(s.index.rank() == 0);
  CHECK(inIpf(s, "input").outputRank() == 0);
  CHECK_THAT(errorOf("slice", {{"input", {T({6, 5})}}}, {{"starts", {1}}, {"ends", {4, 5}}}),
             Contains("starts and ends must have one entry per dim of the input"));
  for (const auto& [starts, ends] :
       std::vector<std::pair<Ints, Ints>>{{{-1, 0}, {4, 5}}, {{3, 0}, {2, 5}}, {{0, 0}, {7, 5}}}) {
    CHECK_THAT(errorOf("slice", {{"input", {T({6, 5})}}}, {{"starts", starts}, {"ends", ends}}),
               Contains("every dim needs 0 <= start <= end <= its size"));
  }
}

TEST_CASE("stdlib: concat", "[stdlib]") {
  SECTION("last axis") {
    Application a = run("concat", {{"tensors", {T({2, 3}), T({2, 5}), T({2, 1})}}}, {{"axis", 1}});
    CHECK(bindInts(a, "sizes") == Ints{3, 5, 1});
    CHECK(bindInt(a, "ax") == 1);
    CHECK(bindInt(a, "i") == 3);
    CHECK(indexShape(a) == Ints{2, 9});
    CHECK(outT(a) == T({2, 9}));
    CHECK(outIpf(a, "result") == IndexProjection::identity(2));
    const PortResult* in = a.input("tensors");
    REQUIRE(in->ipfs.size() == 3);
    CHECK(in->ipfs[0] == ipf({{1, 0}, {0, 1}}, {0, 0}, {1, 1}));
    CHECK(in->ipfs[1] == ipf({{1, 0}, {0, 1}}, {0, -3}, {1, 1}));
    CHECK(in->ipfs[2] == ipf({{1, 0}, {0, 1}}, {0, -8}, {1, 1}));
    CHECK(a.reductionDims.empty());
    CHECK(a.flops == 0);
    checkConcatReads(a, 1);

    Application m = run("concat", {{"tensors", {T({2, 3}), T({2, 5})}}}, {{"axis", -1}});
    CHECK(indexShape(m) == Ints{2, 8});
    CHECK(bindInt(m, "ax") == 1);
    CHECK(m.input("tensors")->ipfs[1] == ipf({{1, 0}, {0, 1}}, {0, -3}, {1, 1}));
  }
  SECTION("first axis") {
    Application a =
        run("concat", {{"tensors", {T({4, 3}, "int32"), T({1, 3}, "int32")}}}, {{"axis", 0}});
    CHECK(indexShape(a) == Ints{5, 3});
    CHECK(outT(a) == T({5, 3}, "int32"));
    const PortResult* in = a.input("tensors");
    CHECK(in->ipfs[0] == IndexProjection::identity(2));
    CHECK(in->ipfs[1] == ipf({{1, 0}, {0, 1}}, {-4, 0}, {1, 1}));
    checkConcatReads(a, 0);
    Application neg = run("concat", {{"tensors", {T({4, 3}), T({1, 3})}}}, {{"axis", -2}});
    CHECK(indexShape(neg) == Ints{5, 3});
    CHECK(neg.input("tensors")->ipfs[1] == ipf({{1, 0}, {0, 1}}, {-4, 0}, {1, 1}));
  }
  SECTION("middle axis of rank 3") {
    Application a =
        run("concat", {{"tensors", {T({2, 3, 4}), T({2, 1, 4}), T({2, 2, 4})}}}, {{"axis", 1}});
    CHECK(indexShape(a) == Ints{2, 6, 4});
    CHECK(outT(a) == T({2, 6, 4}));
    CHECK(bindInts(a, "sizes") == Ints{3, 1, 2});
    const PortResult* in = a.input("tensors");
    REQUIRE(in->ipfs.size() == 3);
    ZMatrix id3{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    CHECK(in->ipfs[0] == IndexProjection(ZAffineMap(id3, ZPoint{0, 0, 0}), ZPoint{1, 1, 1}));
    CHECK(in->ipfs[1] == IndexProjection(ZAffineMap(id3, ZPoint{0, -3, 0}), ZPoint{1, 1, 1}));
    CHECK(in->ipfs[2] == IndexProjection(ZAffineMap(id3, ZPoint{0, -4, 0}), ZPoint{1, 1, 1}));
    checkConcatReads(a, 1);
    Application b = run("concat", {{"tensors", {T({2, 3, 4}), T({2, 1, 4})}}}, {{"axis", -2}});
    CHECK(indexShape(b) == Ints{2, 4, 4});
    checkConcatReads(b, 1);
  }
  SECTION("one tensor, rank 1, and empty extents") {
    Application v = run("concat", {{"tensors", {T({4}, "int64")}}}, {{"axis", 0}});
    CHECK(outT(v) == T({4}, "int64"));
    CHECK(v.input("tensors")->ipfs[0] == IndexProjection::identity(1));
    Application z = run("concat", {{"tensors", {T({2, 0}), T({2, 3})}}}, {{"axis", 1}});
    CHECK(indexShape(z) == Ints{2, 3});
    CHECK(z.input("tensors")->ipfs[1] == IndexProjection::identity(2));
  }
  SECTION("errors") {
    // Non-axis dims disagree: the clause and the shapes are named.
    std::string e = errorOf("concat", {{"tensors", {T({4, 3, 7}), T({4, 5, 6})}}}, {{"axis", 1}});
    CHECK_THAT(e, Contains("concat: the tensors must agree in every dim but the axis"));
    CHECK_THAT(e, Contains("$ax = 1"));
    CHECK_THAT(e, Contains("$shapes = [[4, 3, 7], [4, 5, 6]]"));
    CHECK_THAT(errorOf("concat", {{"tensors", {T({2, 3}), T({4, 3})}}}, {{"axis", 1}}),
               Contains("$shapes = [[2, 3], [4, 3]]"));
    CHECK(errorOf("concat", {{"tensors", {T({2, 3}), T({4, 3})}}}, {{"axis", 0}}).empty());
    // Ranks disagree.
    CHECK_THAT(errorOf("concat", {{"tensors", {T({2, 3}), T({2, 3, 1})}}}, {{"axis", 0}}),
               Contains("all tensors must have the same rank ($shapes = [[2, 3], [2, 3, 1]])"));
    // Axis out of range, scalars.
    CHECK_THAT(errorOf("concat", {{"tensors", {T({2, 3}), T({2, 3})}}}, {{"axis", 2}}),
               Contains("axis must be a dim of the tensors (from -rank to rank - 1) ($shapes = "
                        "[[2, 3], [2, 3]], $axis = 2)"));
    CHECK_THAT(errorOf("concat", {{"tensors", {T({2, 3}), T({2, 3})}}}, {{"axis", -3}}),
               Contains("axis must be a dim of the tensors"));
    CHECK_THAT(errorOf("concat", {{"tensors", {T({}), T({})}}}, {{"axis", 0}}),
               Contains("axis must be a dim of the tensors"));
    CHECK_THAT(errorOf("concat", {{"tensors", {T({2, 3}), T({2, 3}, "float64")}}}, {{"axis", -1}}),
               Contains("float64"));
    CHECK_THAT(errorOf("concat", {{"tensors", {T({2, 3}), T({2, 3})}}}), Contains("param axis"));
    CHECK_THAT(errorOf("concat", {{"tensors", {}}}, {{"axis", 0}}),
               Contains("needs at least one tensor"));
  }
}

TEST_CASE("stdlib: split", "[stdlib]") {
  Application a = run("split", {{"input", {T({10, 4})}}}, {{"axis", 0}, {"sections", {3, 7}}});
  CHECK(indexShape(a) == Ints{10, 4});
  const PortResult* r = a.output("results");
  REQUIRE(r != nullptr);
  CHECK(r->list);
  REQUIRE(r->tensors.size() == 2);
  CHECK(r->tensors[0] == T({3, 4}));
  CHECK(r->tensors[1] == T({7, 4}));
  CHECK(r->ipfs[0] == IndexProjection::identity(2));
  CHECK(r->ipfs[1] == ipf({{1, 0}, {0, 1}}, {-3, 0}, {1, 1}));
  CHECK(a.reductionDims.empty());

  Application b =
      run("split", {{"input", {T({2, 9, 3}, "int32")}}}, {{"axis", -2}, {"sections", {2, 3, 4}}});
  const PortResult* rb = b.output("results");
  REQUIRE(rb->tensors.size() == 3);
  CHECK(rb->tensors[2] == T({2, 4, 3}, "int32"));
  CHECK(rb->ipfs[2] == ipf({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {0, -5, 0}, {1, 1, 1}));

  CHECK_THAT(errorOf("split", {{"input", {T({10, 4})}}}, {{"axis", 0}, {"sections", {3, 6}}}),
             Contains("sections must add up to the extent of the axis ($sections = [3, 6], "
                      "$shape = [10, 4], $ax = 0)"));
  CHECK_THAT(errorOf("split", {{"input", {T({10, 4})}}}, {{"axis", 0}, {"sections", {0, 10}}}),
             Contains("sections must be a non-empty list of sizes of at least 1"));
  CHECK_THAT(errorOf("split", {{"input", {T({10, 4})}}}, {{"axis", 2}, {"sections", {4}}}),
             Contains("axis must be a dim of the input"));
}

TEST_CASE("stdlib: reshape", "[stdlib]") {
  SECTION("through the common refinement") {
    Application a = run("reshape", {{"input", {T({4, 6})}}}, {{"shape", {2, 2, 6}}});
    CHECK(bindInts(a, "r") == Ints{2, 2, 6});
    CHECK(indexShape(a) == Ints{2, 2, 6});
    CHECK(outT(a) == T({2, 2, 6}));
    CHECK(inIpf(a, "input") == ipf({{2, 1, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
    CHECK(outIpf(a, "result") == IndexProjection::identity(3));
    CHECK(a.reductionDims.empty());
  }
  SECTION("-1 is inferred") {
    Application a = run("reshape", {{"input", {T({2, 3, 4}, "int32")}}}, {{"shape", {-1, 4}}});
    CHECK(bindInts(a, "out") == Ints{6, 4});
    CHECK(outT(a) == T({6, 4}, "int32"));
    CHECK(indexShape(a) == Ints{2, 3, 4});
    CHECK(outIpf(a, "result") == ipf({{3, 1, 0}, {0, 0, 1}}, {0, 0}, {1, 1}));
    Application b = run("reshape", {{"input", {T({2, 3, 4})}}}, {{"shape", {3, -1}}});
    CHECK(outT(b) == T({3, 8}));
    Application c = run("reshape", {{"input", {T({12})}}}, {{"shape", {-1}}});
    CHECK(outT(c) == T({12}));
  }
  SECTION("no refinement: one point") {
    Application a = run("reshape", {{"input", {T({2, 3})}}}, {{"shape", {3, 2}}});
    CHECK(indexShape(a) == Ints{1});
    CHECK(outT(a) == T({3, 2}));
    CHECK(inIpf(a, "input") == ipf({{0}, {0}}, {0, 0}, {2, 3}));
    CHECK(outIpf(a, "result") == ipf({{0}, {0}}, {0, 0}, {3, 2}));
  }
  SECTION("bad shapes") {
    CHECK_THAT(errorOf("reshape", {{"input", {T({2, 3})}}}, {{"shape", {4, 2}}}),
               Contains("shape must hold as many elements as the input"));
    CHECK_THAT(errorOf("reshape", {{"input", {T({2, 3})}}}, {{"shape", {-1, -1}}}),
               Contains("shape may have at most one -1"));
    CHECK_THAT(errorOf("reshape", {{"input", {T({2, 3})}}}, {{"shape", {-2, -3}}}),
               Contains("shape entries must be sizes, or -1 for the one inferred size"));
    CHECK_THAT(errorOf("reshape", {{"input", {T({2, 3})}}}, {{"shape", {-1, 4}}}),
               Contains("shape must hold as many elements as the input"));
  }
}

TEST_CASE("stdlib: cast", "[stdlib]") {
  Application a = run("cast", {{"input", {T({3, 4})}}}, {{"dtype", "bfloat16"}});
  CHECK(outT(a) == T({3, 4}, "bfloat16"));
  CHECK(inIpf(a, "input") == IndexProjection::identity(2));
  CHECK(outIpf(a, "result") == IndexProjection::identity(2));
  CHECK(outT(run("cast", {{"input", {T({5}, "int64")}}}, {{"dtype", "float64"}})) ==
        T({5}, "float64"));
  CHECK_THAT(errorOf("cast", {{"input", {T({3})}}}, {{"dtype", "complex64"}}),
             Contains("$dtype is complex64 from params, expected one of"));
  CHECK_THAT(errorOf("cast", {{"input", {T({3})}}}), Contains("param dtype: required"));
}

TEST_CASE("stdlib: bool moves through the data-movement kernels and cast", "[stdlib]") {
  // A causal mask reshaped, transposed, sliced, joined and split stays bool.
  CHECK(outT(run("cast", {{"input", {T({3, 4})}}}, {{"dtype", "bool"}})) == T({3, 4}, "bool"));
  CHECK(outT(run("cast", {{"input", {T({3, 4}, "bool")}}}, {{"dtype", "int64"}})) ==
        T({3, 4}, "int64"));
  CHECK(outT(run("transpose", {{"input", {T({2, 3}, "bool")}}}, {{"perm", {1, 0}}})) ==
        T({3, 2}, "bool"));
  CHECK(outT(run("reshape", {{"input", {T({4, 6}, "bool")}}}, {{"shape", {1, 1, 24}}})) ==
        T({1, 1, 24}, "bool"));
  CHECK(outT(run("slice", {{"input", {T({8, 8}, "bool")}}},
                 {{"starts", {0, 0}}, {"ends", {4, 4}}})) == T({4, 4}, "bool"));
  CHECK(outT(run("concat", {{"tensors", {T({2, 3}, "bool"), T({2, 5}, "bool")}}}, {{"axis", 1}})) ==
        T({2, 8}, "bool"));
  // Kernels that compute on numbers still refuse bool.
  CHECK_THAT(errorOf("add", {{"A", {T({4}, "bool")}}, {"B", {T({4}, "bool")}}}),
             Contains("$dtype is bool from A, expected one of"));
}

// ---------------------------------------------------------------- conv2d, embedding

TEST_CASE("stdlib: conv2d", "[stdlib]") {
  SECTION("defaults") {
    Application a = run("conv2d", {{"input", {T({2, 3, 8, 9})}}, {"weight", {T({4, 3, 3, 2})}}});
    CHECK(bindInt(a, "OH") == 6);
    CHECK(bindInt(a, "OW") == 8);
    CHECK(indexShape(a) == Ints{2, 4, 6, 8, 3, 3, 2});
    CHECK(outT(a) == T({2, 4, 6, 8}));
    CHECK(inIpf(a, "input") == ipf({{1, 0, 0, 0, 0, 0, 0},
                                    {0, 0, 0, 0, 1, 0, 0},
                                    {0, 0, 1, 0, 0, 1, 0},
                                    {0, 0, 0, 1, 0, 0, 1}},
                                   {0, 0, 0, 0}, {1, 1, 1, 1}));
    CHECK(inIpf(a, "weight") == ipf({{0, 1, 0, 0, 0, 0, 0},
                                     {0, 0, 0, 0, 1, 0, 0},
                                     {0, 0, 0, 0, 0, 1, 0},
                                     {0, 0, 0, 0, 0, 0, 1}},
                                    {0, 0, 0, 0}, {1, 1, 1, 1}));
    CHECK(a.reductionDims == dims({4, 5, 6}));
    CHECK(*a.output("result")->combine == Combine::Sum);
    CHECK(a.flops == 2 * 2 * 4 * 6 * 8 * 3 * 3 * 2);
  }
  SECTION("stride, padding, dilation") {
    Application a = run("conv2d", {{"input", {T({1, 2, 17, 15})}}, {"weight", {T({3, 2, 3, 5})}}},
                        {{"stride", {2, 1}}, {"padding", {1, 2}}, {"dilation", {2, 1}}});
    CHECK(bindInt(a, "OH") == (17 + 2 - 2 * 2 - 1) / 2 + 1);
    CHECK(bindInt(a, "OW") == 15 + 4 - 4);
    CHECK(outT(a) == T({1, 3, 8, 15}));
    CHECK(inIpf(a, "input") == ipf({{1, 0, 0, 0, 0, 0, 0},
                                    {0, 0, 0, 0, 1, 0, 0},
                                    {0, 0, 2, 0, 0, 2, 0},
                                    {0, 0, 0, 1, 0, 0, 1}},
                                   {0, 0, -1, -2}, {1, 1, 1, 1}));
    // The padded read reaches outside the input on both sides.
    ZRange read = inIpf(a, "input").apply(a.index);
    CHECK(read.start() == ZPoint{0, 0, -1, -2});
    CHECK(read.end() == ZPoint{1, 2, 18, 17});
  }
  SECTION("groups == O: output channel o reads input channels gmul*o + cg") {
    // MobileNet's depthwise conv (O == C == groups) and a grouped one with two
    // input channels per output channel.
    Application a = run("conv2d", {{"input", {T({2, 4, 6, 6})}}, {"weight", {T({4, 1, 3, 3})}}},
                        {{"groups", 4}, {"padding", {1, 1}}});
    CHECK(bindInt(a, "gmul") == 1);
    CHECK(indexShape(a) == Ints{2, 4, 6, 6, 1, 3, 3});
    CHECK(outT(a) == T({2, 4, 6, 6}));
    CHECK(inIpf(a, "input") == ipf({{1, 0, 0, 0, 0, 0, 0},
                                    {0, 1, 0, 0, 1, 0, 0},
                                    {0, 0, 1, 0, 0, 1, 0},
                                    {0, 0, 0, 1, 0, 0, 1}},
                                   {0, 0, -1, -1}, {1, 1, 1, 1}));
    CHECK(a.reductionDims == dims({4, 5, 6}));
    Application b = run("conv2d", {{"input", {T({1, 6, 5, 5})}}, {"weight", {T({3, 2, 3, 3})}}},
                        {{"groups", 3}});
    CHECK(bindInt(b, "gmul") == 2);
    CHECK(indexShape(b) == Ints{1, 3, 3, 3, 2, 3, 3});
    // Output channels [1, 3) read input channels [2, 6).
    ZRange part(ZPoint{0, 1, 0, 0, 0, 0, 0}, ZPoint{1, 3, 3, 3, 2, 3, 3});
    CHECK(inIpf(b, "input").apply(part) == ZRange(ZPoint{0, 2, 0, 0}, ZPoint{1, 6, 5, 5}));
  }
  SECTION("bad inputs") {
    CHECK_THAT(errorOf("conv2d", {{"input", {T({2, 3, 8, 9})}}, {"weight", {T({4, 2, 3, 3})}}}),
               Contains("the weight's input channels (dim 1) must be the input's channels C "
                        "divided by groups"));
    CHECK_THAT(errorOf("conv2d", {{"input", {T({1, 8, 5, 5})}}, {"weight", {T({4, 2, 3, 3})}}},
                       {{"groups", 2}}),
               Contains("groups must be 1 or the number of output channels O"));
    CHECK_THAT(errorOf("conv2d", {{"input", {T({1, 8, 5, 5})}}, {"weight", {T({4, 1, 3, 3})}}},
                       {{"groups", 4}}),
               Contains("must be the input's channels C divided by groups"));
    CHECK_THAT(errorOf("conv2d", {{"input", {T({2, 3, 2, 2})}}, {"weight", {T({4, 3, 3, 3})}}}),
               Contains("the dilated filter must fit in the padded input"));
    CHECK_THAT(errorOf("conv2d", {{"input", {T({2, 3, 8, 8})}}, {"weight", {T({4, 3, 3, 3})}}},
                       {{"stride", {0, 1}}}),
               Contains("stride and dilation must be at least 1"));
    CHECK_THAT(errorOf("conv2d", {{"input", {T({2, 3, 8, 8})}}, {"weight", {T({4, 3, 3, 3})}}},
                       {{"padding", {1}}}),
               Contains("stride, padding and dilation must each have 2 entries"));
    CHECK_THAT(errorOf("conv2d", {{"input", {T({3, 8, 8})}}, {"weight", {T({4, 3, 3, 3})}}}),
               Contains("expects rank 4"));
  }
}

TEST_CASE("stdlib: conv2d_grouped's points are whole groups", "[stdlib]") {
  SECTION("index [N, G, OH, OW, KH, KW]; each IPF's tile a group's channels") {
    Application a =
        run("conv2d_grouped",
            {{"input", {T({2, 12, 7, 7})}}, {"weight", {T({8, 3, 3, 3})}}, {"bias", {T({8})}}},
            {{"groups", 4}, {"padding", {1, 1}}, {"stride", {2, 2}}});
    CHECK(indexShape(a) == Ints{2, 4, 4, 4, 3, 3});
    CHECK(outT(a) == T({2, 8, 4, 4}));
    CHECK(a.reductionDims == dims({4, 5}));
    CHECK(a.reductionSplittable);
    CHECK(a.output("result")->combine == metakernel::Combine::Sum);
    // result [n, 2g .. 2g + 1, oh, ow]; input [n, 3g .. 3g + 2, 2 oh + kh - 1,
    // 2 ow + kw - 1]; weight [2g .. 2g + 1, 0 .. 2, kh, kw]; bias [2g .. 2g + 1].
    CHECK(outIpf(a, "result") ==
          ipf({{1, 0, 0, 0, 0, 0}, {0, 2, 0, 0, 0, 0}, {0, 0, 1, 0, 0, 0}, {0, 0, 0, 1, 0, 0}},
              {0, 0, 0, 0}, {1, 2, 1, 1}));
    CHECK(inIpf(a, "input") ==
          ipf({{1, 0, 0, 0, 0, 0}, {0, 3, 0, 0, 0, 0}, {0, 0, 2, 0, 1, 0}, {0, 0, 0, 2, 0, 1}},
              {0, 0, -1, -1}, {1, 3, 1, 1}));
    CHECK(inIpf(a, "weight") ==
          ipf({{0, 2, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 1}},
              {0, 0, 0, 0}, {2, 3, 1, 1}));
    CHECK(inIpf(a, "bias") == ipf({{0, 2, 0, 0, 0, 0}}, {0}, {2}));
    CHECK(a.flops == 2 * 2 * 4 * 4 * 4 * 3 * 3 * (2 * 3));
  }
  SECTION("conv2d_grouped_act: no combine, so KH and KW stay whole") {
    Application a = run("conv2d_grouped_act",
                        {{"input", {T({1, 8, 9, 9})}},
                         {"weight", {T({6, 4, 3, 3})}},
                         {"residual", {T({1, 6, 5, 5})}}},
                        {{"groups", 2}, {"padding", {1, 1}}, {"stride", {2, 2}}, {"min", 0}});
    CHECK(indexShape(a) == Ints{1, 2, 5, 5, 3, 3});
    CHECK_FALSE(a.reductionSplittable);
    CHECK_FALSE(a.output("result")->combine.has_value());
    CHECK(inIpf(a, "residual") == outIpf(a, "result"));
  }
  SECTION("bad inputs: a group count that does not divide O, channels that do not match") {
    CHECK_THAT(errorOf("conv2d_grouped",
                       {{"input", {T({1, 8, 5, 5})}}, {"weight", {T({6, 2, 3, 3})}}},
                       {{"groups", 4}}),
               Contains("groups must be at least 1 and divide the weight's output channels O"));
    CHECK_THAT(errorOf("conv2d_grouped",
                       {{"input", {T({1, 8, 5, 5})}}, {"weight", {T({8, 4, 3, 3})}}},
                       {{"groups", 4}}),
               Contains("the weight's input channels (dim 1) must be the input's channels C "
                        "divided by groups"));
    CHECK_THAT(
        errorOf("conv2d_grouped", {{"input", {T({1, 8, 5, 5})}}, {"weight", {T({8, 2, 3, 3})}}}),
        Contains("groups"));
  }
}

TEST_CASE("stdlib: conv2d_act is conv2d's index space with no combine", "[stdlib]") {
  SECTION("its reduction dims are not splittable; bias and residual read at the output point") {
    Application a = run("conv2d_act",
                        {{"input", {T({2, 4, 6, 6})}},
                         {"weight", {T({4, 1, 3, 3})}},
                         {"bias", {T({4})}},
                         {"residual", {T({2, 4, 6, 6})}}},
                        {{"groups", 4}, {"padding", {1, 1}}, {"min", 0}, {"max", 6}});
    CHECK(indexShape(a) == Ints{2, 4, 6, 6, 1, 3, 3});
    CHECK(outT(a) == T({2, 4, 6, 6}));
    CHECK(a.reductionDims == dims({4, 5, 6}));
    CHECK_FALSE(a.reductionSplittable);
    CHECK_FALSE(a.output("result")->combine.has_value());
    CHECK(inIpf(a, "residual") == outIpf(a, "result"));
    CHECK(inIpf(a, "bias") == ipf({{0, 1, 0, 0, 0, 0, 0}}, {0}, {1}));
    CHECK(a.flops == 2 * 2 * 4 * 6 * 6 * 3 * 3);
    CHECK(a.params["min"] == Json(0));
    CHECK(a.params["max"] == Json(6));
  }
  SECTION("min and max default to clip's: the largest float64") {
    Application a =
        run("conv2d_act", {{"input", {T({1, 3, 5, 5})}}, {"weight", {T({2, 3, 3, 3})}}});
    CHECK(indexShape(a) == Ints{1, 2, 3, 3, 3, 3, 3});
    CHECK(a.params["min"] == Json(-1.7976931348623157e308));
    CHECK(a.params["max"] == Json(1.7976931348623157e308));
  }
  SECTION("bad inputs: conv2d's checks, and a residual of another shape") {
    CHECK_THAT(errorOf("conv2d_act", {{"input", {T({1, 8, 5, 5})}}, {"weight", {T({4, 2, 3, 3})}}},
                       {{"groups", 2}}),
               Contains("groups must be 1 or the number of output channels O"));
    CHECK_THAT(errorOf("conv2d_act", {{"input", {T({1, 8, 8, 8})}},
                                      {"weight", {T({4, 8, 3, 3})}},
                                      {"residual", {T({1, 4, 8, 8})}}}),
               Contains("$OH is 8 from"));
    CHECK_THAT(errorOf("conv2d_act", {{"input", {T({1, 8, 8, 8})}},
                                      {"weight", {T({4, 8, 3, 3})}},
                                      {"residual", {T({1, 4, 6, 6}, "float16")}}}),
               Contains("residual"));
  }
}

// ---------------------------------------------------------------- pooling

TEST_CASE("stdlib: maxpool2d and avgpool2d read a whole window per output point", "[stdlib]") {
  SECTION("maxpool2d, stride, padding and dilation") {
    Application a =
        run("maxpool2d", {{"input", {T({2, 3, 9, 8})}}},
            {{"kernel", {3, 2}}, {"stride", {2, 1}}, {"padding", {1, 1}}, {"dilation", {2, 1}}});
    CHECK(bindInt(a, "OH") == (9 + 2 - 2 * 2 - 1) / 2 + 1);
    CHECK(bindInt(a, "OW") == 8 + 2 - 1);
    CHECK(indexShape(a) == Ints{2, 3, 4, 9});
    CHECK(outT(a) == T({2, 3, 4, 9}));
    CHECK(inIpf(a, "input") == ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 1}},
                                   {0, 0, -1, -1}, {1, 1, 5, 2}));
    CHECK(outIpf(a, "result") == IndexProjection::identity(4));
    CHECK(a.reductionDims.empty());
    CHECK(a.flops == 2 * 3 * 4 * 9 * 3 * 2);
    // The padded read reaches outside the input on both sides.
    ZRange read = inIpf(a, "input").apply(a.index);
    CHECK(read.start() == ZPoint{0, 0, -1, -1});
    CHECK(read.end() == ZPoint{2, 3, 10, 9});
  }
  SECTION("avgpool2d") {
    Application a = run("avgpool2d", {{"input", {T({1, 2, 7, 7}, "float16")}}},
                        {{"kernel", {3, 3}}, {"stride", {2, 2}}, {"padding", {1, 1}}});
    CHECK(indexShape(a) == Ints{1, 2, 4, 4});
    CHECK(outT(a) == T({1, 2, 4, 4}, "float16"));
    CHECK(inIpf(a, "input") == ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 2, 0}, {0, 0, 0, 2}},
                                   {0, 0, -1, -1}, {1, 1, 3, 3}));
  }
  SECTION("bad params") {
    const Inputs in = {{"input", {T({1, 1, 4, 4})}}};
    CHECK_THAT(errorOf("maxpool2d", in), Contains("kernel"));
    CHECK_THAT(errorOf("maxpool2d", in, {{"kernel", {2, 2}}, {"padding", {2, 0}}}),
               Contains("padding must be at least 0 and smaller than the kernel"));
    CHECK_THAT(errorOf("maxpool2d", in, {{"kernel", {2, 0}}}),
               Contains("kernel, stride and dilation must be at least 1"));
    CHECK_THAT(errorOf("maxpool2d", in, {{"kernel", {5, 1}}}),
               Contains("the dilated window must fit in the padded input"));
    CHECK_THAT(errorOf("avgpool2d", in, {{"kernel", {2}}}),
               Contains("kernel, stride and padding must each have 2 entries"));
    CHECK_THAT(errorOf("avgpool2d", {{"input", {T({1, 1, 4, 4}, "int32")}}}, {{"kernel", {2, 2}}}),
               Contains("$dtype is int32 from input, expected one of"));
  }
}

TEST_CASE("stdlib: global_avgpool sums H and W as reduction dims", "[stdlib]") {
  Application a = run("global_avgpool", {{"input", {T({2, 5, 7, 3})}}});
  CHECK(bindInt(a, "HW") == 21);
  CHECK(indexShape(a) == Ints{2, 5, 7, 3});
  CHECK(outT(a) == T({2, 5, 1, 1}));
  CHECK(outIpf(a, "result") ==
        ipf({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}}, {0, 0, 0, 0}, {1, 1, 1, 1}));
  CHECK(a.reductionDims == dims({2, 3}));
  CHECK(a.reductionSplittable);
  CHECK(*a.output("result")->combine == Combine::Sum);
  CHECK_THAT(errorOf("global_avgpool", {{"input", {T({2, 5, 7})}}}), Contains("expects rank 4"));
}

TEST_CASE("stdlib: batchnorm reads element c of each [C] vector", "[stdlib]") {
  const Inputs vectors = {
      {"scale", {T({3})}}, {"bias", {T({3})}}, {"mean", {T({3})}}, {"var", {T({3})}}};
  Inputs in = vectors;
  in.insert(in.begin(), {"input", {T({2, 3, 4, 5})}});
  Application a = run("batchnorm", in);
  CHECK(indexShape(a) == Ints{2, 3, 4, 5});
  CHECK(outT(a) == T({2, 3, 4, 5}));
  CHECK(bindInts(a, "cs") == Ints{-1, 1, 1});
  CHECK(inIpf(a, "input") == IndexProjection::identity(4));
  CHECK(inIpf(a, "var") == ipf({{0, 1, 0, 0}}, {0}, {1}));
  CHECK(outIpf(a, "result") == IndexProjection::identity(4));
  CHECK(a.reductionDims.empty());
  in[0] = {"input", {T({6, 3})}};
  CHECK(bindInts(run("batchnorm", in), "cs") == Ints{-1});
  in[0] = {"input", {T({3})}};
  CHECK_THAT(errorOf("batchnorm", in), Contains("expects rank at least 2"));
}

TEST_CASE("stdlib: gather along any axis", "[stdlib]") {
  SECTION("axis 1 of [A, V, B] by [I, J] indices") {
    Application a =
        run("gather", {{"data", {T({2, 7, 3})}}, {"indices", {T({4, 5}, "int64")}}}, {{"axis", 1}});
    CHECK(bindInt(a, "V") == 7);
    CHECK(indexShape(a) == Ints{2, 4, 5, 3});
    CHECK(outT(a) == T({2, 4, 5, 3}));
    CHECK(inIpf(a, "data") ==
          ipf({{1, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 1}}, {0, 0, 0}, {1, 7, 1}));
    CHECK(inIpf(a, "indices") == ipf({{0, 1, 0, 0}, {0, 0, 1, 0}}, {0, 0}, {1, 1}));
    CHECK(outIpf(a, "result") == IndexProjection::identity(4));
  }
  SECTION("negative axis, scalar indices, rank-1 data") {
    Application a = run("gather", {{"data", {T({5, 6}, "int32")}}, {"indices", {T({}, "int32")}}},
                        {{"axis", -1}});
    CHECK(indexShape(a) == Ints{5});
    CHECK(outT(a) == T({5}, "int32"));
    Application b = run("gather", {{"data", {T({9})}}, {"indices", {T({3}, "int64")}}});
    CHECK(indexShape(b) == Ints{3});
    CHECK(inIpf(b, "data") == ipf({{0}}, {0}, {9}));
  }
  SECTION("bad inputs") {
    CHECK_THAT(
        errorOf("gather", {{"data", {T({2, 5})}}, {"indices", {T({4}, "int32")}}}, {{"axis", -3}}),
        Contains("axis must be a dim of data"));
    CHECK_THAT(errorOf("gather", {{"data", {T({})}}, {"indices", {T({4}, "int32")}}}),
               Contains("data must have at least one dim"));
    CHECK_THAT(errorOf("gather", {{"data", {T({4})}}, {"indices", {T({4}, "float32")}}}),
               Contains("$itype is float32 from indices, expected one of: int32, int64"));
  }
}

TEST_CASE("stdlib: embedding", "[stdlib]") {
  Application a = run("embedding", {{"table", {T({100, 16})}}, {"indices", {T({4, 7}, "int64")}}});
  CHECK(bindInt(a, "V") == 100);
  CHECK(indexShape(a) == Ints{4, 7, 16});
  CHECK(outT(a) == T({4, 7, 16}));
  CHECK(inIpf(a, "table") == ipf({{0, 0, 0}, {0, 0, 1}}, {0, 0}, {100, 1}));
  CHECK(inIpf(a, "indices") == ipf({{1, 0, 0}, {0, 1, 0}}, {0, 0}, {1, 1}));
  CHECK(outIpf(a, "result") == IndexProjection::identity(3));
  CHECK(a.reductionDims.empty());

  Application s =
      run("embedding", {{"table", {T({10, 4}, "bfloat16")}}, {"indices", {T({}, "int32")}}});
  CHECK(outT(s) == T({4}, "bfloat16"));

  CHECK_THAT(errorOf("embedding", {{"table", {T({10, 4})}}, {"indices", {T({3}, "float32")}}}),
             Contains("$itype is float32 from indices, expected one of: int32, int64"));
  CHECK_THAT(errorOf("embedding", {{"table", {T({10})}}, {"indices", {T({3}, "int32")}}}),
             Contains("expects rank 2"));
}

// ---------------------------------------------------------------- properties

namespace {

struct Case {
  std::string kernel;
  Inputs inputs;
  Json params = Json::object();
};

using Rng = std::mt19937_64;

std::int64_t uni(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

Ints randShape(Rng& rng, std::int64_t minRank, std::int64_t maxRank, std::int64_t maxDim = 4) {
  Ints s(static_cast<std::size_t>(uni(rng, minRank, maxRank)));
  for (auto& d : s) {
    d = uni(rng, 1, maxDim);
  }
  return s;
}

Json jsonInts(const Ints& xs) {
  Json out = Json::array();
  for (std::int64_t x : xs) {
    out.push_back(x);
  }
  return out;
}

// Random factorization-preserving reshape target (split or merge some dims).
Ints randReshape(Rng& rng, const Ints& in) {
  std::int64_t total = 1;
  for (std::int64_t d : in) {
    total *= d;
  }
  Ints out;
  std::int64_t left = total;
  while (left > 1 && out.size() < 4) {
    std::vector<std::int64_t> divisors;
    for (std::int64_t d = 1; d <= left; ++d) {
      if (left % d == 0) {
        divisors.push_back(d);
      }
    }
    std::int64_t d = divisors[static_cast<std::size_t>(
        uni(rng, 0, static_cast<std::int64_t>(divisors.size()) - 1))];
    out.push_back(d);
    left /= d;
  }
  if (left > 1 || out.empty()) {
    out.push_back(left);
  }
  if (uni(rng, 0, 2) == 0) {
    out[static_cast<std::size_t>(uni(rng, 0, static_cast<std::int64_t>(out.size()) - 1))] = -1;
  }
  return out;
}

// Over 120 lines: one branch per standard kernel, the random operands each
// kernel accepts, read side by side.
// A masked heads attention's mask and fill: a mask of [b, 1, 1, t] or
// [s, t] (t broadcast half the time), and a one-element fill.
void addHeadsMask(Case& c, Rng& rng, std::int64_t b, std::int64_t s, std::int64_t t) {
  const Ints mask = uni(rng, 0, 2) == 0 ? Ints{b, 1, 1, t} : Ints{s, uni(rng, 0, 1) == 0 ? t : 1};
  c.inputs.push_back({"mask", {T(mask, "bool")}});
  c.inputs.push_back({"fill", {T({})}});
}

Case randomCase(const std::string& k, Rng& rng) {
  auto pick = [&](std::initializer_list<const char*> xs) {
    return std::string(*(xs.begin() + uni(rng, 0, static_cast<std::int64_t>(xs.size()) - 1)));
  };
  if (k == "matmul") {
    Ints b = randShape(rng, 0, 2, 3);
    std::int64_t m = uni(rng, 1, 4), kk = uni(rng, 1, 4), n = uni(rng, 1, 4);
    auto operand = [&] { // broadcasting: drop leading dims, make some 1
      Ints s(b.begin() + uni(rng, 0, static_cast<std::int64_t>(b.size())), b.end());
      for (auto& d : s) {
        d = uni(rng, 0, 2) == 0 ? 1 : d;
      }
      return uni(rng, 0, 1) == 0 ? b : s;
    };
    Ints x = operand(), w = operand();
    x.insert(x.end(), {m, kk});
    w.insert(w.end(), {kk, n});
    return {k, {{"X", {T(x)}}, {"W", {T(w)}}}};
  }
  if (k == "linear") {
    Ints x = randShape(rng, 0, 2, 3);
    std::int64_t kk = uni(rng, 1, 4), n = uni(rng, 1, 4);
    x.push_back(kk);
    return {k, {{"X", {T(x)}}, {"W", {T({kk, n})}}, {"bias", {T({n})}}}};
  }
  if (k == "linear_act") { // with a residual of the result's shape half the time
    Ints x = randShape(rng, 0, 2, 3);
    std::int64_t kk = uni(rng, 1, 4), n = uni(rng, 1, 4);
    Ints r = x;
    r.push_back(n);
    x.push_back(kk);
    if (uni(rng, 0, 1) == 0) {
      return {k, {{"X", {T(x)}}, {"W", {T({kk, n})}}, {"bias", {T({n})}}}};
    }
    return {k, {{"X", {T(x)}}, {"W", {T({kk, n})}}, {"bias", {T({n})}}, {"residual", {T(r)}}}};
  }
  // issue 34's broadcasting binaries (bool operands for the logic ones) and prelu.
  const bool logic = k == "logical_and" || k == "logical_or" || k == "logical_xor";
  const bool issue34Binary = logic || k == "maximum" || k == "minimum" || k == "mod" ||
                             k == "fmod" || k == "equal" || k == "less" || k == "less_equal" ||
                             k == "greater" || k == "greater_equal" || k == "prelu";
  if (k == "add" || k == "sub" || k == "mul" || k == "div" || k == "pow" || issue34Binary) {
    Ints out = randShape(rng, 0, 3);
    auto operand = [&] {
      Ints s(out.begin() + uni(rng, 0, static_cast<std::int64_t>(out.size())), out.end());
      for (auto& d : s) {
        if (uni(rng, 0, 2) == 0) {
          d = 1;
        }
      }
      return s;
    };
    Ints a = operand(), b = operand();
    if (uni(rng, 0, 1) == 0) {
      a = out; // make sure the full broadcast shape appears sometimes
    }
    const std::string dtype = logic ? "bool" : "float32";
    if (k == "prelu") {
      return {k, {{"X", {T(a)}}, {"slope", {T(b)}}}};
    }
    return {k, {{"A", {T(a, dtype)}}, {"B", {T(b, dtype)}}}};
  }
  if (k == "relu" || k == "gelu" || k == "gelu_tanh" || k == "tanh" || k == "exp" ||
      k == "sigmoid" || k == "silu" || k == "neg" || k == "erf" || k == "sqrt" ||
      k == "reciprocal" || k == "log" || k == "abs" || k == "clip") {
    return {k, {{"input", {T(randShape(rng, 0, 3))}}}};
  }
  for (const char* u : {"logical_not",  "isnan",     "isinf", "sign",     "floor",
                        "ceil",         "round",     "sin",   "cos",      "tan",
                        "asin",         "acos",      "atan",  "sinh",     "cosh",
                        "asinh",        "acosh",     "atanh", "softplus", "softsign",
                        "leaky_relu",   "elu",       "selu",  "celu",     "thresholded_relu",
                        "hard_sigmoid", "hard_swish"}) {
    if (k == u) {
      return {k, {{"input", {T(randShape(rng, 0, 3), k == "logical_not" ? "bool" : "float32")}}}};
    }
  }
  if (k == "add_scalar" || k == "mul_scalar" || k == "rsub_scalar" || k == "rdiv_scalar" ||
      k == "div_scalar" || k == "pow_scalar") {
    return {k, {{"input", {T(randShape(rng, 0, 3))}}}, {{"value", 0.5}}};
  }
  if (k == "cast") {
    return {k, {{"input", {T(randShape(rng, 0, 3))}}}, {{"dtype", pick({"float16", "int32"})}}};
  }
  if (k == "sum" || k == "mean" || k == "max" || k == "min" || k == "prod" || k == "argmax" ||
      k == "argmin" || k == "softmax") {
    Ints s = randShape(rng, 1, 3);
    auto r = static_cast<std::int64_t>(s.size());
    Json params = {{"axis", uni(rng, -r, r - 1)}};
    if (k != "softmax") {
      params["keepdims"] = uni(rng, 0, 1) == 1;
    }
    return {k, {{"input", {T(s)}}}, params};
  }
  if (k == "attention" || k == "attention_masked") {
    // Q [b..., s, d], K [bk..., d, t] (half the time [bk..., t, d] with
    // transpose_k), V [bv..., t, e], bk and bv b or shapes that broadcast
    // against it (grouped-query attention); a mask of the scores' trailing
    // dims (t broadcast half the time), a one-element fill.
    const Ints b = randShape(rng, 0, 2);
    const std::int64_t sq = uni(rng, 1, 4), d = uni(rng, 1, 4), t = uni(rng, 1, 4),
                       e = uni(rng, 1, 4);
    auto with = [](Ints batch, Ints tail) {
      batch.insert(batch.end(), tail.begin(), tail.end());
      return batch;
    };
    auto broadcasting = [&](const Ints& full) { // drop leading dims, or make some 1
      Ints out(full.begin() + uni(rng, 0, static_cast<std::int64_t>(full.size())), full.end());
      for (std::int64_t& x : out) {
        x = uni(rng, 0, 2) == 0 ? 1 : x;
      }
      return out;
    };
    const bool keysAsRows = uni(rng, 0, 1) == 1;
    const Ints bk = uni(rng, 0, 1) == 0 ? b : broadcasting(b);
    const Ints bv = uni(rng, 0, 1) == 0 ? b : broadcasting(b);
    Case c{k,
           {{"Q", {T(with(b, {sq, d}))}},
            {"K", {T(with(bk, keysAsRows ? Ints{t, d} : Ints{d, t}))}},
            {"V", {T(with(bv, {t, e}))}}},
           {{"divisor", 2.0}, {"transpose_k", keysAsRows}}};
    if (k == "attention_masked") {
      c.inputs.push_back({"mask", {T({sq, uni(rng, 0, 1) == 0 ? t : 1}, "bool")}});
      c.inputs.push_back({"fill", {T({})}});
    }
    return c;
  }
  if (k == "attention_heads" || k == "attention_heads_masked") {
    // Q [b, s, heads*d], K [b, t, heads*d], V [b, t, heads*e]; a mask of
    // [s, t] (t broadcast half the time) or [b, 1, 1, t].
    const std::int64_t b = uni(rng, 1, 3), heads = uni(rng, 1, 3), sq = uni(rng, 1, 4),
                       d = uni(rng, 1, 3), t = uni(rng, 1, 4), e = uni(rng, 1, 3);
    Case c{k,
           {{"Q", {T({b, sq, heads * d})}},
            {"K", {T({b, t, heads * d})}},
            {"V", {T({b, t, heads * e})}}},
           {{"heads", heads}, {"divisor", 2.0}}};
    if (k == "attention_heads_masked") {
      addHeadsMask(c, rng, b, sq, t);
    }
    return c;
  }
  if (k == "attention_heads_qkv" || k == "attention_heads_qkv_masked") {
    // One packed [b, s, 3*heads*d] tensor bound to Q, K and V (as the rule
    // does) or three of that shape; a mask of [s, s], [s, 1] or [b, 1, 1, s].
    const std::int64_t b = uni(rng, 1, 3), heads = uni(rng, 1, 3), sq = uni(rng, 1, 4),
                       d = uni(rng, 1, 3);
    const TensorType qkv = T({b, sq, 3 * heads * d});
    Case c{k, {{"Q", {qkv}}, {"K", {qkv}}, {"V", {qkv}}}, {{"heads", heads}, {"divisor", 2.0}}};
    if (k == "attention_heads_qkv_masked") {
      addHeadsMask(c, rng, b, sq, sq);
    }
    return c;
  }
  if (k == "attention_heads_seq_first") {
    // Q [s, b, heads*d], K [t, b, heads*d], V [t, b, heads*e].
    const std::int64_t b = uni(rng, 1, 3), heads = uni(rng, 1, 3), sq = uni(rng, 1, 4),
                       d = uni(rng, 1, 3), t = uni(rng, 1, 4), e = uni(rng, 1, 3);
    return {k,
            {{"Q", {T({sq, b, heads * d})}},
             {"K", {T({t, b, heads * d})}},
             {"V", {T({t, b, heads * e})}}},
            {{"heads", heads}, {"divisor", 2.0}}};
  }
  if (k == "attention_heads_qkv_seq_first") {
    // One packed [s, b, 3*heads*d] tensor bound to Q, K and V.
    const std::int64_t b = uni(rng, 1, 3), heads = uni(rng, 1, 3), sq = uni(rng, 1, 4),
                       d = uni(rng, 1, 3);
    const TensorType qkv = T({sq, b, 3 * heads * d});
    return {k, {{"Q", {qkv}}, {"K", {qkv}}, {"V", {qkv}}}, {{"heads", heads}, {"divisor", 2.0}}};
  }
  if (k == "layernorm") {
    Ints s = randShape(rng, 1, 3);
    Ints d = {s.back()};
    return {k, {{"input", {T(s)}}, {"gamma", {T(d)}}, {"beta", {T(d)}}}};
  }
  if (k == "rmsnorm") {
    Ints s = randShape(rng, 1, 3);
    return {k, {{"input", {T(s)}}, {"gamma", {T({s.back()})}}}};
  }
  if (k == "rope") {
    // X [b..., d] with d even; cos and sin of X's trailing dims, each
    // leading one 1 half the time (broadcast).
    Ints x = randShape(rng, 1, 3);
    x.push_back(2 * uni(rng, 1, 3));
    Ints table(x.begin() + uni(rng, 0, static_cast<std::int64_t>(x.size()) - 1), x.end());
    for (std::size_t i = 0; i + 1 < table.size(); ++i) {
      if (uni(rng, 0, 1) == 0) {
        table[i] = 1;
      }
    }
    return {k, {{"X", {T(x)}}, {"cos", {T(table)}}, {"sin", {T(table)}}}};
  }
  if (k == "transpose") {
    Ints s = randShape(rng, 0, 4);
    Ints perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (auto& p : perm) {
      if (uni(rng, 0, 3) == 0) {
        p -= static_cast<std::int64_t>(s.size());
      }
    }
    return {k, {{"input", {T(s)}}}, {{"perm", jsonInts(perm)}}};
  }
  if (k == "concat") {
    Ints s = randShape(rng, 1, 3);
    auto r = static_cast<std::int64_t>(s.size());
    std::int64_t axis = uni(rng, -r, r - 1);
    std::vector<TensorType> ts;
    auto count = uni(rng, 1, 4);
    for (std::int64_t j = 0; j < count; ++j) {
      s[static_cast<std::size_t>((axis + r) % r)] = uni(rng, 1, 3);
      ts.push_back(T(s));
    }
    return {k, {{"tensors", ts}}, {{"axis", axis}}};
  }
  if (k == "split") {
    Ints s = randShape(rng, 1, 3, 6);
    auto r = static_cast<std::int64_t>(s.size());
    std::int64_t axis = uni(rng, -r, r - 1);
    std::int64_t len = s[static_cast<std::size_t>((axis + r) % r)];
    Ints sections;
    std::int64_t left = len;
    while (left > 0) {
      std::int64_t take = uni(rng, 1, left);
      sections.push_back(take);
      left -= take;
    }
    return {k, {{"input", {T(s)}}}, {{"axis", axis}, {"sections", jsonInts(sections)}}};
  }
  if (k == "where") {
    Ints out = randShape(rng, 0, 3);
    auto operand = [&] {
      Ints s(out.begin() + uni(rng, 0, static_cast<std::int64_t>(out.size())), out.end());
      for (auto& d : s) {
        if (uni(rng, 0, 2) == 0) {
          d = 1;
        }
      }
      return s;
    };
    return {k,
            {{"condition", {T(operand(), "bool")}},
             {"X", {T(uni(rng, 0, 1) == 0 ? out : operand(), "int32")}},
             {"Y", {T(operand(), "int32")}}}};
  }
  if (k == "slice") {
    Ints s = randShape(rng, 0, 3);
    Ints starts, ends;
    for (std::int64_t d : s) {
      starts.push_back(uni(rng, 0, d - 1));
      ends.push_back(uni(rng, starts.back() + 1, d));
    }
    return {k, {{"input", {T(s)}}}, {{"starts", jsonInts(starts)}, {"ends", jsonInts(ends)}}};
  }
  if (k == "reshape") {
    Ints s = randShape(rng, 1, 3);
    return {k, {{"input", {T(s)}}}, {{"shape", jsonInts(randReshape(rng, s))}}};
  }
  if (k == "conv2d" || k == "conv2d_act" || k == "conv2d_grouped" || k == "conv2d_grouped_act") {
    const bool anyGroups = k == "conv2d_grouped" || k == "conv2d_grouped_act";
    std::int64_t kh = uni(rng, 1, 3), kw = uni(rng, 1, 3);
    Ints stride = {uni(rng, 1, 2), uni(rng, 1, 2)};
    Ints padding = {uni(rng, 0, 1), uni(rng, 0, 1)};
    Ints dilation = {uni(rng, 1, 2), uni(rng, 1, 2)};
    std::int64_t h = dilation[0] * (kh - 1) + 1 + uni(rng, 0, 4);
    std::int64_t w = dilation[1] * (kw - 1) + 1 + uni(rng, 0, 4);
    std::int64_t c = uni(rng, 1, 2);
    // conv2d: groups == O (depthwise style) half of the time, weight [O,
    // C/O, KH, KW]; conv2d_grouped: 1 to 3 groups of 1 to 2 outputs each.
    const std::int64_t groups = uni(rng, 0, 1) == 0 && !anyGroups ? 1 : uni(rng, 1, 3);
    const std::int64_t o =
        anyGroups ? groups * uni(rng, 1, 2) : (groups == 1 ? uni(rng, 1, 2) : groups);
    const std::int64_t n = uni(rng, 1, 2);
    Case out{k,
             {{"input", {T({n, c * groups, h, w})}}, {"weight", {T({o, c, kh, kw})}}},
             {{"stride", jsonInts(stride)},
              {"padding", jsonInts(padding)},
              {"dilation", jsonInts(dilation)},
              {"groups", groups}}};
    // conv2d_act: a residual of the result's shape half of the time, and a clip.
    if ((k == "conv2d_act" || k == "conv2d_grouped_act") && uni(rng, 0, 1) == 1) {
      const std::int64_t oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
      const std::int64_t ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
      out.inputs.push_back({"residual", {T({n, o, oh, ow})}});
      out.params["min"] = 0;
    }
    return out;
  }
  if (k == "maxpool2d" || k == "avgpool2d") {
    const bool dilated = k == "maxpool2d";
    Ints kernel = {uni(rng, 1, 3), uni(rng, 1, 3)};
    Ints stride = {uni(rng, 1, 2), uni(rng, 1, 2)};
    Ints padding = {uni(rng, 0, kernel[0] - 1), uni(rng, 0, kernel[1] - 1)};
    Ints dilation = {dilated ? uni(rng, 1, 2) : 1, dilated ? uni(rng, 1, 2) : 1};
    std::int64_t h = dilation[0] * (kernel[0] - 1) + 1 + uni(rng, 0, 4);
    std::int64_t w = dilation[1] * (kernel[1] - 1) + 1 + uni(rng, 0, 4);
    Json params = {
        {"kernel", jsonInts(kernel)}, {"stride", jsonInts(stride)}, {"padding", jsonInts(padding)}};
    if (dilated) {
      params["dilation"] = jsonInts(dilation);
    } else {
      params["count_include_pad"] = uni(rng, 0, 1) == 1;
    }
    return {k, {{"input", {T({uni(rng, 1, 2), uni(rng, 1, 3), h, w})}}}, params};
  }
  if (k == "batchnorm") {
    Ints s = randShape(rng, 2, 4);
    Ints c = {s[1]};
    return {k,
            {{"input", {T(s)}},
             {"scale", {T(c)}},
             {"bias", {T(c)}},
             {"mean", {T(c)}},
             {"var", {T(c)}}}};
  }
  if (k == "gather") {
    Ints data = randShape(rng, 1, 3);
    auto r = static_cast<std::int64_t>(data.size());
    return {k,
            {{"data", {T(data)}}, {"indices", {T(randShape(rng, 0, 2), pick({"int32", "int64"}))}}},
            {{"axis", uni(rng, -r, r - 1)}}};
  }
  if (k == "global_avgpool") {
    return {k, {{"input", {T({uni(rng, 1, 2), uni(rng, 1, 3), uni(rng, 1, 4), uni(rng, 1, 4)})}}}};
  }
  if (k == "embedding") {
    return {k,
            {{"table", {T({uni(rng, 1, 5), uni(rng, 1, 4)})}},
             {"indices", {T(randShape(rng, 0, 2), pick({"int32", "int64"}))}}}};
  }
  FAIL("no random cases for kernel " << k);
  return {};
}

std::string describe(const Case& c) {
  std::string out = c.kernel + " inputs:";
  for (const auto& [port, tensors] : c.inputs) {
    out += " " + port + "=";
    for (const TensorType& t : tensors) {
      out += toString(t) + ";";
    }
  }
  return out + " params: " + c.params.dump();
}

// Row-major offset of a point inside `bounds` (which contains it).
std::size_t offsetIn(const ZRange& bounds, const ZPoint& p) {
  std::size_t off = 0;
  for (std::size_t d = 0; d < bounds.rank(); ++d) {
    off = off * static_cast<std::size_t>(bounds.extent(d)) +
          static_cast<std::size_t>(p[d] - bounds.start()[d]);
  }
  return off;
}

std::int64_t reductionMultiplicity(const Application& a) {
  std::int64_t m = 1;
  for (std::size_t d : a.reductionDims) {
    m *= a.index.extent(d);
  }
  return m;
}

// Index dims that are a minor term of an output IPF row with several terms
// (reshape's `4*@[0] + @[1]`): splitting them makes a range's projection a
// bounding box larger than the points' regions, so a plan must not split them.
std::vector<bool> minorDims(const Application& a) {
  std::vector<bool> minor(a.index.rank(), false);
  for (const PortResult& out : a.outputs) {
    for (const IndexProjection& ipf : out.ipfs) {
      const ZMatrix& p = ipf.map().projection();
      for (std::size_t r = 0; r < p.rows(); ++r) {
        std::size_t major = p.cols();
        int terms = 0;
        for (std::size_t c = 0; c < p.cols(); ++c) {
          if (p(r, c) != 0) {
            ++terms;
            if (major == p.cols() || std::abs(p(r, c)) > std::abs(p(r, major))) {
              major = c;
            }
          }
        }
        for (std::size_t c = 0; c < p.cols() && terms > 1; ++c) {
          if (p(r, c) != 0 && c != major) {
            minor[c] = true;
          }
        }
      }
    }
  }
  return minor;
}

void checkProperties(const Case& c) {
  INFO(describe(c));
  Application a = run(c.kernel, c.inputs, c.params);
  REQUIRE(a.index.size() <= 20000);
  // Windowed kernels: padding reads outside the input, and a stride may skip
  // the input's last rows.
  const bool windowed =
      c.kernel.rfind("conv2d", 0) == 0 || c.kernel == "maxpool2d" || c.kernel == "avgpool2d";
  const bool paddedConv = windowed && (c.params["padding"][0] != 0 || c.params["padding"][1] != 0);
  if (c.kernel == "concat") {
    checkConcatReads(a, bindInt(a, "ax"));
  }

  // Outputs: the regions of all index points, intersected with each tensor's bounds,
  // cover every element exactly once (no combine) or once per reduction point
  // (conv2d_act, conv2d_grouped_act: reduction dims and no combine, so a plan never splits them).
  for (const PortResult& out : a.outputs) {
    for (std::size_t t = 0; t < out.tensors.size(); ++t) {
      INFO("output " << out.name << "[" << t << "]");
      ZRange bounds = ZRange::fromShape(ZPoint(out.tensors[t].shape));
      std::vector<std::int64_t> count(static_cast<std::size_t>(bounds.size()), 0);
      a.index.forEachPoint([&](const ZPoint& p) {
        ZRange region = out.ipfs[t].apply(p);
        if (!out.list) {
          CHECK(bounds.contains(region));
        }
        bounds.intersection(region).forEachPoint(
            [&](const ZPoint& e) { ++count[offsetIn(bounds, e)]; });
      });
      const bool whole = c.kernel == "conv2d_act" || c.kernel == "conv2d_grouped_act";
      std::int64_t expected = out.combine || whole ? reductionMultiplicity(a) : 1;
      CHECK(std::all_of(count.begin(), count.end(), [&](std::int64_t n) { return n == expected; }));
      if (!out.combine && !whole) {
        // Only extent-1 dims (reshape's single point) may have a zero column.
        for (std::size_t d : a.reductionDims) {
          CHECK(a.index.extent(d) == 1);
        }
      }
    }
  }

  // Inputs: the whole index range reads inside each tensor (list ports: after
  // intersection with the tensor's bounds), and reads all of it (conv2d only
  // partially: a stride may skip the last rows; slice: the box starts..ends).
  for (const PortResult& in : a.inputs) {
    for (std::size_t t = 0; t < in.tensors.size(); ++t) {
      INFO("input " << in.name << "[" << t << "]");
      ZRange bounds = ZRange::fromShape(ZPoint(in.tensors[t].shape));
      ZRange read = in.ipfs[t].apply(a.index);
      if (in.list) {
        read = bounds.intersection(read);
      }
      if (!paddedConv) {
        CHECK(bounds.contains(read));
      }
      const bool packed = c.kernel.rfind("attention_heads_qkv", 0) == 0 && in.name.size() == 1;
      if (c.kernel == "slice") {
        CHECK(read.start() == ZPoint(c.params["starts"].get<Ints>()));
        CHECK(read.end() == ZPoint(c.params["ends"].get<Ints>()));
      } else if (packed) {
        // Q, K and V each read their third of the packed last dim, whole.
        const std::int64_t third = in.tensors[t].shape.back() / 3;
        const std::int64_t k = in.name == "Q" ? 0 : in.name == "K" ? 1 : 2;
        Ints start(in.tensors[t].shape.size(), 0), end = in.tensors[t].shape;
        start.back() = k * third;
        end.back() = (k + 1) * third;
        CHECK(read.start() == ZPoint(start));
        CHECK(read.end() == ZPoint(end));
      } else if (!windowed) {
        CHECK(read == bounds);
      }
    }
  }

  // Tiles: splitting the index space into a grid, the projections of the tiles of
  // an output without combine are disjoint and cover it -- as long as no minor
  // term of a merged row (reshape) is split (docs/metakernels-design.md), nor
  // a reduction dim where reductions are not splittable.
  std::vector<bool> minor = minorDims(a);
  std::vector<std::int64_t> parts;
  for (std::size_t d = 0; d < a.index.rank(); ++d) {
    const bool kept =
        std::find(a.reductionDims.begin(), a.reductionDims.end(), d) != a.reductionDims.end() &&
        !a.reductionSplittable;
    parts.push_back(minor[d] || kept ? 1 : std::min<std::int64_t>(a.index.extent(d), 2));
  }
  if (a.index.size() > 0) {
    std::vector<ZRange> tiles = a.index.tile(parts);
    for (const PortResult& out : a.outputs) {
      if (out.combine) {
        continue;
      }
      for (std::size_t t = 0; t < out.tensors.size(); ++t) {
        ZRange bounds = ZRange::fromShape(ZPoint(out.tensors[t].shape));
        std::int64_t covered = 0;
        std::vector<ZRange> regions;
        for (const ZRange& tile : tiles) {
          ZRange r = bounds.intersection(out.ipfs[t].apply(tile));
          if (!r.isEmpty() || r.rank() == 0) {
            covered += r.size();
            regions.push_back(r);
          }
        }
        CHECK(covered == bounds.size());
        for (std::size_t i = 0; i < regions.size(); ++i) {
          for (std::size_t j = i + 1; j < regions.size(); ++j) {
            if (regions[i].rank() > 0) {
              CHECK_FALSE(regions[i].intersects(regions[j]));
            }
          }
        }
      }
    }
  }
}

} // namespace

TEST_CASE("stdlib: random applications tile outputs and read inside inputs", "[stdlib][property]") {
  Rng rng(20240213);
  for (const Metakernel* k : lib().kernels()) {
    for (int i = 0; i < 25; ++i) {
      Case c = randomCase(k->name, rng);
      checkProperties(c);
    }
  }
}
