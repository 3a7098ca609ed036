// Rewrite rules (core/rewrite): loading, finding sites, rewriting, and the
// standard rules checked on their examples (`rewrites check`).
#include <bit>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "core/cost/plan_file.hpp"
#include "core/cost/target.hpp"
#include "core/driver/rewrite_pass.hpp"
#include "core/driver/rewrites_command.hpp"
#include "core/rewrite/apply.hpp"
#include "core/rewrite/rule.hpp"
#include "core/search/exhaustive.hpp"
#include "core/search/mutate.hpp"
#include "core/search/search.hpp"
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

// The rules `expand --rewrites default` applies: the pre-pass's and the
// search's (approximate rules only with --approximate).
std::vector<const rewrite::Rule*> always() {
  std::vector<const rewrite::Rule*> out;
  for (const auto& r : standard().rules()) {
    if ((r->always || r->search) && !r->approximate) {
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

// ---------------------------------------------------------------- rules as choices of the search

TEST_CASE("rules marked search make one graph per subset of them", "[rewrite][variants]") {
  const driver::RewriteVariants v =
      driver::rewriteVariants(expandText(kBlock), "default", {}, lib());
  // In file order; each has a site in the block.
  CHECK(v.searchRules == std::vector<std::string>{"conv_add_relu", "conv_add", "conv_relu"});
  REQUIRE(v.graphs.size() == 8);
  CHECK(v.masks == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(v.graphs[0].operations.size() == 5); // none: as given
  CHECK(v.sites[0].empty());
  CHECK(v.graphs[2].operations.size() == 4); // conv_add: conv2+add, relu2
  CHECK(v.graphs[7].operations.size() == 2); // all
  CHECK(v.full() == 7);
  // Distinct sites over all graphs: conv_add_relu's, conv_add's, conv_relu's.
  REQUIRE(v.allSites.size() == 3);
  std::vector<std::string> rules;
  for (std::size_t i : v.siteIndices[7]) {
    rules.push_back(v.allSites[i].rule);
  }
  CHECK(rules == std::vector<std::string>{"conv_relu", "conv_add_relu"});

  // A move between graphs carries each op's choice through the names: a fused
  // op takes the first op it replaced, an op fused away the op that took it.
  const search::GraphVariants links = v.links();
  CHECK(links.reported == 7);
  CHECK(links.from[7][0] == std::vector<std::int64_t>{0, 2});
  CHECK(links.from[0][7] == std::vector<std::int64_t>{0, 0, 1, 1, 1});
  CHECK(links.from[2][0] == std::vector<std::int64_t>{0, 1, 2, 4});

  SECTION("--rewrites none is the graph as given, alone") {
    const driver::RewriteVariants none =
        driver::rewriteVariants(expandText(kBlock), "none", {}, lib());
    CHECK(none.graphs.size() == 1);
    CHECK(none.searchRules.empty());
    CHECK(none.allSites.empty());
  }
}

// Three convolutions, each followed by a ReLU only it reads: conv_relu's
// three sites.
std::string threeConvReluText() {
  std::string tensors = R"("x": {"dtype": "float32", "shape": [1, 4, 6, 6]})";
  std::string ops;
  std::string in = "x";
  for (int i = 1; i <= 3; ++i) {
    const std::string n = std::to_string(i);
    tensors +=
        R"(, "w)" + n + R"(": {"dtype": "float32", "shape": [4, 4, 3, 3], "constant": true})";
    ops += std::string(i > 1 ? ", " : "") + R"({"name": "conv)" + n +
           R"(", "kernel": "conv2d", "params": {"padding": [1, 1]}, "inputs": {"input": ")" + in +
           R"(", "weight": "w)" + n + R"("}, "outputs": {"result": "c)" + n +
           R"("}}, {"name": "relu)" + n + R"(", "kernel": "relu", "inputs": {"input": "c)" + n +
           R"("}, "outputs": {"result": "r)" + n + R"("}})";
    in = "r" + n;
  }
  return R"({"tapestry": "graph/v1", "name": "three", "tensors": {)" + tensors +
         R"(}, "operations": [)" + ops + R"(], "outputs": ["r3"]})";
}

TEST_CASE("a rule's sites in two groups: variants fuse one group and not the other",
          "[rewrite][variants]") {
  const graph::ExpandedGraph g = expandText(threeConvReluText());
  // The filter: only the site that starts at conv2.
  const rewrite::Rule* convRelu = nullptr;
  for (const auto& r : standard().rules()) {
    convRelu = r->name == "conv_relu" ? r.get() : convRelu;
  }
  REQUIRE(convRelu != nullptr);
  const rewrite::RewriteResult one = rewrite::rewriteGraph(
      g, {convRelu}, lib(), [](const graph::ExpandedGraph& in, const rewrite::Site& site) {
        return in.operations[site.ops.front()].name == "conv2";
      });
  REQUIRE(one.applied.size() == 1);
  CHECK(one.applied[0].replaced == std::vector<std::string>{"conv2", "relu2"});
  CHECK(one.graph.operations.size() == 5);

  const driver::RewriteVariants v = driver::rewriteVariants(g, "default", {}, lib());
  CHECK(v.searchRules == std::vector<std::string>{"conv_relu"});
  CHECK(v.groups == std::vector<std::size_t>{2});
  // Bit 0: the first half of the sites (conv1's and conv2's), bit 1 conv3's.
  CHECK(v.masks == std::vector<std::uint32_t>{0, 2, 1, 3});
  CHECK(v.steps == std::vector<std::uint32_t>{3, 1, 2});
  REQUIRE(v.graphs.size() == 4);
  CHECK(v.graphs[0].operations.size() == 6);
  CHECK(v.graphs[1].operations.size() == 5); // conv3 + relu3 fused
  REQUIRE(v.sites[1].size() == 1);
  CHECK(v.sites[1][0].replaced == std::vector<std::string>{"conv3", "relu3"});
  CHECK(v.graphs[2].operations.size() == 4); // conv1 + relu1, conv2 + relu2
  CHECK(v.sites[2].size() == 2);
  CHECK(v.graphs[3].operations.size() == 3);
  CHECK(v.allSites.size() == 3);

  // A move flips one step: a group, or the whole rule.
  const search::GraphVariants links = v.links();
  CHECK(links.steps == v.steps);
  std::vector<search::SearchSpace> spaces;
  for (const graph::ExpandedGraph& graph : v.graphs) {
    spaces.emplace_back(graph, 2);
  }
  std::vector<bool> reached(4, false);
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    search::Rng rng(seed);
    plan::PlanChoice c = plan::singleDeviceChoice(v.graphs[1]);
    c.variant = 1;
    REQUIRE(search::toggleVariant(spaces, links, c, rng));
    reached[c.variant] = true;
    CHECK(spaces[c.variant].contains(c));
  }
  // From mask 2: to 0 (group 1 off) and 3 (group 0 on), never to 1 (two flips).
  CHECK(reached == std::vector<bool>{true, false, false, true});
}

TEST_CASE("more search rules than a variant mask holds is an error", "[rewrite][variants]") {
  // 32 search rules that each match relu1 and relu2 (a relu for a relu).
  std::string text;
  for (int i = 0; i < 32; ++i) {
    text += "same_relu_" + std::to_string(i) +
            ":\n  doc: a relu kept.\n  search: true\n"
            "  match:\n    a: {kernel: relu, inputs: {input: x}, outputs: {result: y}}\n"
            "  replace:\n    b: {kernel: relu, inputs: {input: x}, outputs: {result: y}}\n"
            "  examples:\n    - inputs: {x: {shape: [2], dtype: float32}}\n";
  }
  const std::string path = std::filesystem::temp_directory_path() / "tapestry_rules_32.yaml";
  {
    std::ofstream f(path);
    f << text;
  }
  const graph::ExpandedGraph g = expandText(kBlock);
  try {
    driver::rewriteVariants(g, "default", {path}, lib());
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    CHECK(std::string(e.what()).find("35 rules marked search match graph block; at most 31 can "
                                     "be searched") != std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST_CASE("a pattern binds a list port element by element", "[rewrite]") {
  // split's results [a, b] match a split of exactly two; the rule reads both.
  const std::string rule = R"(split_add:
  doc: the halves of a split added back (a test rule).
  match:
    sp: {kernel: split, inputs: {input: x}, outputs: {results: [a, b]}}
    sum: {kernel: add, inputs: {A: a, B: b}, outputs: {result: y}}
  where:
    - "$sp_sections[0] == $sp_sections[1]"
  replace:
    lo: {kernel: slice, params: {starts: "= [0, 0]", ends: "= $a"}, inputs: {input: x}, outputs: {result: l}}
    hi: {kernel: slice, params: {starts: "= [$a[0], 0]", ends: "= $x"}, inputs: {input: x}, outputs: {result: h}}
    sum: {kernel: add, inputs: {A: l, B: h}, outputs: {result: y}}
  examples:
    - params: {sp: {axis: 0, sections: [2, 2]}}
      inputs: {x: {shape: [4, 3], dtype: float64}}
)";
  std::string err;
  CHECK(checkRule(rule, "split_add", err) == 0);
  const std::string path = std::filesystem::temp_directory_path() / "tapestry_split_add.yaml";
  {
    std::ofstream f(path);
    f << rule;
  }
  const rewrite::RuleSet set = rewrite::RuleSet::load({path}, lib());
  std::filesystem::remove(path);
  const rewrite::Rule* r = set.find("split_add");
  REQUIRE(r != nullptr);
  auto graphOf = [](const std::string& sections, const std::string& results) {
    return expandText(R"({"tapestry": "graph/v1", "name": "g",
      "tensors": {"x": {"dtype": "float32", "shape": [4, 3]}},
      "operations": [
        {"name": "sp", "kernel": "split", "params": {"axis": 0, "sections": )" +
                      sections + R"(}, "inputs": {"input": "x"}, "outputs": {"results": )" +
                      results + R"(}},
        {"name": "sum", "kernel": "add", "inputs": {"A": "a", "B": "b"}, "outputs": {"result": "y"}}],
      "outputs": ["y"]})");
  };
  const graph::ExpandedGraph two = graphOf("[2, 2]", R"(["a", "b"])");
  const std::vector<rewrite::Site> sites = rewrite::findSites(two, *r);
  REQUIRE(sites.size() == 1);
  CHECK(two.tensors[sites[0].tensors.at("a")].name == "a");
  CHECK(two.tensors[sites[0].tensors.at("b")].name == "b");
  // The results named the other way round: the add reads element 1 then
  // element 0, which the pattern does not say (its add is not commutative).
  CHECK(rewrite::findSites(graphOf("[2, 2]", R"(["b", "a"])"), *r).empty());
  // Three results: the list has the wrong length, so nothing matches.
  CHECK(rewrite::findSites(graphOf("[1, 1, 2]", R"(["a", "b", "c"])"), *r).empty());
}

TEST_CASE("a move to another graph keeps what it can of each split", "[rewrite][variants]") {
  const driver::RewriteVariants v =
      driver::rewriteVariants(expandText(kBlock), "default", {}, lib());
  const search::GraphVariants links = v.links();
  std::vector<search::SearchSpace> spaces;
  for (const graph::ExpandedGraph& g : v.graphs) {
    spaces.emplace_back(g, 4);
  }
  // Variant 0: conv1 split along O on devices 1, 2; conv2 along C (a reduction
  // dim only the unfused conv2d may split) on devices 2, 3.
  plan::PlanChoice start = plan::singleDeviceChoice(v.graphs[0]);
  start.ops[0] = spaces[0].opChoice({1, 2, 1, 1, 1, 1, 1}, 1);
  start.ops[2] = spaces[0].opChoice({1, 1, 1, 1, 2, 1, 1}, 2);
  REQUIRE(spaces[0].contains(start));
  std::vector<bool> reached(8, false);
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    search::Rng rng(seed);
    plan::PlanChoice c = start;
    REQUIRE(search::toggleVariant(spaces, links, c, rng));
    const std::uint32_t w = c.variant;
    reached[w] = true;
    CHECK(std::popcount(v.masks[w]) == 1); // one rule away from none
    CHECK(spaces[w].contains(c));
    // Whatever holds conv1 keeps its O split and offset.
    const std::size_t held = static_cast<std::size_t>(links.from[w][0][0]);
    CHECK(held == 0);
    CHECK(c.ops[0].split[1] == 2);
    CHECK(c.ops[0].devices == std::vector<int>{1, 2});
    // conv2's C split survives only where conv2 stays a conv2d.
    std::size_t conv2 = 0;
    while (links.from[w][0][conv2] != 2) {
      ++conv2;
    }
    const bool fused = v.graphs[w].operations[conv2].kernel == "conv2d_act";
    CHECK(c.ops[conv2].split[4] == (fused ? 1 : 2));
  }
  CHECK((reached[1] && reached[2] && reached[4]));
  // With one graph there is nowhere to go.
  search::Rng rng(1);
  plan::PlanChoice alone = start;
  CHECK_FALSE(search::toggleVariant({spaces[0]}, search::GraphVariants{}, alone, rng));
}

TEST_CASE("a search over graph variants is deterministic and reports the rewritten baselines",
          "[rewrite][variants]") {
  const driver::RewriteVariants v =
      driver::rewriteVariants(expandText(kBlock), "default", {}, lib());
  const cost::Target t = cost::loadTarget("cpu-2");
  search::ChoiceScorer scorer(v.links(), t);
  search::SearchOptions options;
  options.seed = 3;
  options.generations = 15;
  options.threads = 1;
  const search::SearchResult one = search::runSearch(scorer, options);
  options.threads = 2;
  const search::SearchResult two = search::runSearch(scorer, options);
  REQUIRE(one.front.size() == two.front.size());
  for (std::size_t i = 0; i < one.front.size(); ++i) {
    CHECK(one.front[i].choice == two.front[i].choice);
    CHECK(one.front[i].objectives == two.front[i].objectives);
  }
  for (const search::BaselineResult& b : one.baselines) {
    CHECK(b.baseline.choice.variant == v.full());
  }
  // Every plan of the front is a member of its own graph's space.
  for (const search::Evaluated& e : one.front) {
    const search::SearchSpace space(v.graphs.at(e.choice.variant), t.deviceCount());
    CHECK(space.contains(e.choice));
  }
}

TEST_CASE("the exhaustive search over graph variants is the front of every variant's plans",
          "[rewrite][variants]") {
  const char* text = R"({"tapestry": "graph/v1", "name": "small",
    "tensors": {"x": {"dtype": "float32", "shape": [1, 2, 2, 1]},
                "w": {"dtype": "float32", "shape": [2, 2, 1, 1], "constant": true}},
    "operations": [
      {"name": "conv", "kernel": "conv2d", "inputs": {"input": "x", "weight": "w"},
       "outputs": {"result": "c"}},
      {"name": "relu", "kernel": "relu", "inputs": {"input": "c"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})";
  const driver::RewriteVariants v = driver::rewriteVariants(expandText(text), "default", {}, lib());
  REQUIRE(v.graphs.size() == 2); // conv_relu or not
  const cost::Target t = cost::loadTarget("cpu-2");
  const search::ChoiceScorer both(v.links(), t);
  const search::SearchResult all = search::runExhaustive(both, 2);
  // Each graph alone, then their plans merged into one front.
  search::ParetoArchive merged;
  std::int64_t evaluations = 0;
  for (std::uint32_t k = 0; k < 2; ++k) {
    const search::ChoiceScorer one(v.graphs[k], t);
    search::SearchResult r = search::runExhaustive(one, 1);
    evaluations += r.evaluations - static_cast<std::int64_t>(r.baselines.size());
    for (search::Evaluated& e : r.front) {
      e.choice.variant = k;
      merged.insert(std::move(e));
    }
  }
  const std::vector<search::Evaluated> expected = merged.sorted();
  REQUIRE(all.front.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(all.front[i].choice == expected[i].choice);
    CHECK(all.front[i].objectives == expected[i].objectives);
  }
  CHECK(all.evaluations == evaluations + static_cast<std::int64_t>(all.baselines.size()));
  CHECK(all.baselines.front().baseline.choice.variant == 1);
}

TEST_CASE("approximate rules run only when asked for, and their sites say so", "[rewrite]") {
  const char* text = R"({"tapestry": "graph/v1", "name": "g",
    "tensors": {"x": {"dtype": "float32", "shape": [4, 8]}}, "operations": [
    {"name": "act", "kernel": "gelu", "inputs": {"input": "x"}, "outputs": {"result": "y"}}],
    "outputs": ["y"]})";
  graph::ExpandedGraph exact = expandText(text);
  CHECK(driver::preRewrite(exact, "default", {}, lib()).empty());
  CHECK(exact.operations[0].kernel == "gelu");
  CHECK(driver::rewriteVariants(expandText(text), "default", {}, lib())
            .graphs.back()
            .operations[0]
            .kernel == "gelu");

  graph::ExpandedGraph asked = expandText(text);
  const std::vector<rewrite::AppliedSite> sites =
      driver::preRewrite(asked, "default", {}, lib(), true);
  REQUIRE(sites.size() == 1);
  CHECK(sites[0].rule == "gelu_as_tanh");
  CHECK(sites[0].approximate);
  CHECK(asked.operations[0].kernel == "gelu_tanh");
  // One operation replaced by one keeps its name.
  CHECK(sites[0].replaced == std::vector<std::string>{"act"});
  CHECK(sites[0].added == std::vector<std::string>{"act"});
  const Json json = driver::rewritesJson(sites);
  CHECK(json[0].at("approximate") == true);
  const driver::RewriteVariants v =
      driver::rewriteVariants(expandText(text), "default", {}, lib(), true);
  CHECK(v.graphs.back().operations[0].kernel == "gelu_tanh");

  // An exact site carries no "approximate" key; a plan's origin lists the
  // approximate rules once each, in site order.
  CHECK_FALSE(driver::rewritesJson({rewrite::AppliedSite{"relu_relu", {"a"}, {"b"}}})[0].contains(
      "approximate"));
  plan::PlanOrigin origin;
  origin.sites = Json::array({Json{{"rule", "b"}, {"approximate", true}}, Json{{"rule", "a"}},
                              Json{{"rule", "b"}, {"approximate", true}},
                              Json{{"rule", "c"}, {"approximate", true}}});
  CHECK(origin.approximateRules() == std::vector<std::string>{"b", "c"});

  try {
    driver::preRewrite(exact, "none", {}, lib(), true);
    FAIL("--approximate with --rewrites none was accepted");
  } catch (const UsageError& e) {
    CHECK(e.message() == "--approximate cannot go with --rewrites none");
  }
}
