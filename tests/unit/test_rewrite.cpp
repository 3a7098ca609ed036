// Rewrite rules (core/rewrite): loading, finding sites, rewriting, and the
// standard rules checked on their examples (`rewrites check`).
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "core/driver/rewrites_command.hpp"
#include "core/rewrite/apply.hpp"
#include "core/rewrite/rule.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using tapestry::testing::expandText;
using tapestry::testing::Failure;
using tapestry::testing::failureOf;
using tapestry::testing::lib;

namespace {

rewrite::RuleSet rulesFrom(const std::string& text) {
  rewrite::RuleSet set;
  set.addFile(SourceFile("r.yaml", text), lib());
  return set;
}

const rewrite::RuleSet& standard() {
  static const rewrite::RuleSet rules = rewrite::RuleSet::load({}, lib());
  return rules;
}

std::vector<const rewrite::Rule*> always() {
  std::vector<const rewrite::Rule*> out;
  for (const auto& r : standard().rules()) {
    if (r->always) {
      out.push_back(r.get());
    }
  }
  return out;
}

// A ResNet-like block: conv -> relu -> conv -> add(identity) -> relu, plus a
// second reader of the first relu's input that blocks nothing.
const char* kBlock = R"({"tapestry": "graph/v1", "name": "block",
  "tensors": {"x": {"dtype": "float32", "shape": [1, 4, 6, 6]},
              "w1": {"dtype": "float32", "shape": [4, 4, 3, 3], "constant": true},
              "b1": {"dtype": "float32", "shape": [4], "constant": true},
              "w2": {"dtype": "float32", "shape": [4, 4, 3, 3], "constant": true}},
  "operations": [
    {"name": "conv1", "kernel": "conv2d", "params": {"padding": [1, 1]},
     "inputs": {"input": "x", "weight": "w1", "bias": "b1"}, "outputs": {"result": "c1"}},
    {"name": "relu1", "kernel": "relu", "inputs": {"input": "c1"}, "outputs": {"result": "r1"}},
    {"name": "conv2", "kernel": "conv2d", "params": {"padding": [1, 1]},
     "inputs": {"input": "r1", "weight": "w2"}, "outputs": {"result": "c2"}},
    {"name": "add", "kernel": "add", "inputs": {"A": "x", "B": "c2"}, "outputs": {"result": "s"}},
    {"name": "relu2", "kernel": "relu", "inputs": {"input": "s"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})";

// `rewrites check NAME` of the rules in `text` (written to a temporary file):
// the exit code, and what went to standard error.
int checkRule(const std::string& text, const std::string& name, std::string& err) {
  const std::string path =
      std::filesystem::temp_directory_path() / ("tapestry_rule_" + name + ".yaml");
  {
    std::ofstream f(path);
    f << text;
  }
  std::ostringstream out, errors;
  driver::RewritesConfig config;
  config.action = driver::RewritesConfig::Action::Check;
  config.rulePaths = {path};
  config.names = {name};
  const int code = driver::runRewritesCommand(config, out, errors);
  std::filesystem::remove(path);
  err = errors.str();
  return code;
}

} // namespace

TEST_CASE("standard rules load and check on their examples", "[rewrite]") {
  REQUIRE(standard().rules().size() >= 9);
  std::ostringstream out, err;
  driver::RewritesConfig config;
  config.action = driver::RewritesConfig::Action::Check;
  const int code = driver::runRewritesCommand(config, out, err);
  INFO(err.str());
  CHECK(code == 0);
  CHECK(out.str().find("all passed") != std::string::npos);
}

TEST_CASE("a residual block fuses into two conv2d_act", "[rewrite]") {
  const graph::ExpandedGraph g = expandText(kBlock);
  const rewrite::RewriteResult r = rewrite::rewriteGraph(g, always(), lib());
  REQUIRE(r.applied.size() == 2);
  // Sites come in the graph's operation order; conv_add_relu (listed before
  // conv_relu) took conv2's relu-less chain whole.
  CHECK(r.applied[0].rule == "conv_relu");
  CHECK(r.applied[0].added == std::vector<std::string>{"conv1+relu1"});
  CHECK(r.applied[1].rule == "conv_add_relu");
  CHECK(r.applied[1].replaced == std::vector<std::string>{"conv2", "add", "relu2"});
  CHECK(r.applied[1].added == std::vector<std::string>{"conv2+add+relu2"});
  REQUIRE(r.graph.operations.size() == 2);
  const graph::Operation& first = r.graph.operations[0];
  CHECK(first.kernel == "conv2d_act");
  CHECK(first.application.params["min"] == Json(0.0));
  CHECK(first.application.params["padding"] == Json::array({1, 1}));
  CHECK(r.graph.operations[1].inputs[3].port == "residual");
  CHECK(r.graph.findTensor("y") != nullptr);
  CHECK(r.graph.findTensor("c1") == nullptr);
  // The fused kernel cannot split the reduction dims.
  CHECK_FALSE(first.application.reductionSplittable);
}

TEST_CASE("an intermediate read elsewhere or a graph output blocks a site", "[rewrite]") {
  std::string text = kBlock;
  // relu1's input c1 is also a graph output.
  text.replace(text.find(R"("outputs": ["y"])"), 16, R"("outputs": ["y", "c1"])");
  const graph::ExpandedGraph g = expandText(text);
  const rewrite::RewriteResult r = rewrite::rewriteGraph(g, always(), lib());
  REQUIRE(r.applied.size() == 1);
  CHECK(r.applied[0].rule == "conv_add_relu");
  CHECK(r.graph.findTensor("c1") != nullptr);
}

TEST_CASE("commutative patterns match either operand order", "[rewrite]") {
  const graph::ExpandedGraph g = expandText(kBlock); // add(A: x, B: c2)
  const std::vector<rewrite::Site> sites = rewrite::findSites(g, standard().get("conv_add"));
  REQUIRE(sites.size() == 1);
  CHECK(g.tensors[sites[0].tensors.at("r")].name == "x");
}

TEST_CASE("conditions see shapes and int params", "[rewrite]") {
  const char* rule = R"(
wide_relu:
  doc: relu pairs on rank-2 tensors only.
  match:
    first: {kernel: relu, inputs: {input: x}, outputs: {result: y}}
    second: {kernel: relu, inputs: {input: y}, outputs: {result: z}}
  where:
    - "len($x) == 2 and $x_dtype == float32"
  replace:
    only: {kernel: relu, inputs: {input: x}, outputs: {result: z}}
  examples:
    - inputs: {x: {shape: [2, 2], dtype: float32}}
)";
  const rewrite::RuleSet set = rulesFrom(rule);
  auto graphOf = [](const std::string& shape) {
    return expandText(
        R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float32", "shape": )" +
        shape + R"(}}, "operations": [
      {"name": "a", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "y"}},
      {"name": "b", "kernel": "relu", "inputs": {"input": "y"}, "outputs": {"result": "z"}}],
      "outputs": ["z"]})");
  };
  CHECK(rewrite::findSites(graphOf("[3, 4]"), set.get("wide_relu")).size() == 1);
  CHECK(rewrite::findSites(graphOf("[3, 4, 5]"), set.get("wide_relu")).empty());
}

TEST_CASE("pattern params: floats match within a float32 rounding, others exactly", "[rewrite]") {
  CHECK(rewrite::paramMatches(Json(1.4142135623730951), Json(1.4142135381698608))); // float32
  CHECK_FALSE(rewrite::paramMatches(Json(1.4142135623730951), Json(1.4142)));
  CHECK(rewrite::paramMatches(Json(1.0), Json(1)));
  CHECK(rewrite::paramMatches(Json(0.0), Json(0.0)));
  CHECK_FALSE(rewrite::paramMatches(Json(0.0), Json(1e-300)));
  CHECK(rewrite::paramMatches(Json::array({1, 2}), Json::array({1, 2})));
  CHECK_FALSE(rewrite::paramMatches(Json(true), Json(false)));

  // The GELU chain as PyTorch exports it (the float32 sqrt(2)), and the same
  // chain with another divisor, which must not match.
  auto chain = [](const char* divisor) {
    return expandText(std::string(R"({"tapestry": "graph/v1", "name": "g",
      "tensors": {"x": {"dtype": "float32", "shape": [4, 8]}}, "operations": [
      {"name": "d", "kernel": "div_scalar", "params": {"value": )") +
                      divisor + R"(}, "inputs": {"input": "x"}, "outputs": {"result": "s"}},
      {"name": "e", "kernel": "erf", "inputs": {"input": "s"}, "outputs": {"result": "e"}},
      {"name": "a", "kernel": "add_scalar", "params": {"value": 1}, "inputs": {"input": "e"},
       "outputs": {"result": "p"}},
      {"name": "m", "kernel": "mul", "inputs": {"A": "p", "B": "x"}, "outputs": {"result": "m"}},
      {"name": "h", "kernel": "mul_scalar", "params": {"value": 0.5}, "inputs": {"input": "m"},
       "outputs": {"result": "y"}}], "outputs": ["y"]})");
  };
  const rewrite::RewriteResult r =
      rewrite::rewriteGraph(chain("1.4142135381698608"), always(), lib());
  REQUIRE(r.applied.size() == 1);
  CHECK(r.applied[0].rule == "gelu_erf");
  REQUIRE(r.graph.operations.size() == 1);
  CHECK(r.graph.operations[0].kernel == "gelu");
  CHECK(rewrite::rewriteGraph(chain("2.0"), always(), lib()).applied.empty());
}

TEST_CASE("bad rule files are located errors", "[rewrite]") {
  auto problem = [](const std::string& text) { return failureOf([&] { rulesFrom(text); }); };
  const std::string head = "r:\n  doc: d\n  match:\n";
  const std::string relu2 =
      "    first: {kernel: relu, inputs: {input: x}, outputs: {result: y}}\n"
      "    second: {kernel: relu, inputs: {input: y}, outputs: {result: z}}\n";
  const std::string ex = "  examples:\n    - inputs: {x: {shape: [2], dtype: float32}}\n";
  Failure f = problem(
      head + relu2 +
      "  replace:\n    only: {kernel: relu, inputs: {input: q}, outputs: {result: z}}\n" + ex);
  CHECK(f.message.find("variable q is never bound") != std::string::npos);
  CHECK(f.location == "r.yaml:7:42");
  CHECK(f.code == ExitCode::InvalidInput);
  f = problem(head + relu2 +
              "  replace:\n    only: {kernel: relu, inputs: {input: x}, outputs: {result: w}}\n" +
              ex);
  CHECK(f.message.find("the pattern's output z is not produced") != std::string::npos);
  f = problem(head + relu2 +
              "  replace:\n    only: {kernel: relux, inputs: {input: x}, outputs: {result: z}}\n" +
              ex);
  CHECK(f.message.find("unknown kernel \"relux\"") != std::string::npos);
  f = problem(head + relu2 + "  where:\n    - \"len($x) ==\"\n" +
              "  replace:\n    only: {kernel: relu, inputs: {input: x}, outputs: {result: z}}\n" +
              ex);
  CHECK(f.message.find("in where") != std::string::npos);
  CHECK(f.location == "r.yaml:7:18");
}

TEST_CASE("rewrites check finds a wrong rule's counter-example", "[rewrite]") {
  const char* rule = R"(
softmax_axis:
  doc: wrong on purpose.
  match:
    sm: {kernel: softmax, inputs: {input: x}, outputs: {result: y}}
  replace:
    other: {kernel: softmax, params: {axis: 0}, inputs: {input: x}, outputs: {result: y}}
  examples:
    - inputs: {x: {shape: [3, 4], dtype: float32}}
)";
  std::string err;
  CHECK(checkRule(rule, "softmax_axis", err) == 3);
  CHECK(err.find("rule softmax_axis, example 1: on inputs of seed 1, output y differs in "
                 "float64") != std::string::npos);
}

TEST_CASE("rewrites check runs random shapes and exact integer checks", "[rewrite]") {
  // Right on rows of 4 (the example), wrong elsewhere: a random shape finds it.
  const char* rule = R"(
sum_as_mean:
  doc: wrong on purpose.
  match:
    total: {kernel: sum, inputs: {input: x}, outputs: {result: y}}
  replace:
    average: {kernel: mean, inputs: {input: x}, outputs: {result: m}}
    times: {kernel: mul_scalar, params: {value: 4.0}, inputs: {input: m}, outputs: {result: y}}
  examples:
    - inputs: {x: {shape: [3, 4], dtype: float64}}
)";
  std::string err;
  CHECK(checkRule(rule, "sum_as_mean", err) == 3);
  CHECK(err.find("example 1: on the random shapes {x: [") != std::string::npos);

  // The standard rules: every example also ran on random shapes, and the
  // rules of products, sums and moves exactly on integers.
  std::ostringstream jout, jerr;
  driver::RewritesConfig all;
  all.action = driver::RewritesConfig::Action::Check;
  all.json = true;
  REQUIRE(driver::runRewritesCommand(all, jout, jerr) == 0);
  const Json doc = Json::parse(jout.str());
  CHECK(doc.at("random_shapes").get<int>() >= doc.at("examples").get<int>());
  CHECK(doc.at("integer_checks").get<int>() > 0);
}
