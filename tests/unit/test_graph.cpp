// Tests for core/graph: decoding graph files, validation messages, topological
// order and cycle reports, defaults (output names, graph outputs), the
// expanded/v1 writer (layout, determinism, round trip) and the expand command.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/driver/expand_command.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/graph.hpp"
#include "core/graph/loader.hpp"
#include "core/graph/writer.hpp"
#include "core/json/json.hpp"
#include "core/json/layout.hpp"
#include "core/metakernel/library.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::graph;
using namespace tapestry::driver;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using tapestry::testing::Failure;
using tapestry::testing::failureOf;

namespace {

const metakernel::MetakernelLibrary& lib() {
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  return library;
}

// Parses, decodes and expands `text` as the file "g.json".
ExpandedGraph expandText(const std::string& text) {
  json::Document doc = json::Document::parse(SourceFile("g.json", text));
  Graph graph = decodeGraph(json::Value(doc));
  return expand(graph, lib());
}

// The formatted diagnostic of expanding `text`, or "" when it succeeds.
std::string errorOf(const std::string& text) {
  const Failure failure = failureOf([&] { expandText(text); });
  CHECK(failure.code == (failure.what.empty() ? ExitCode::Ok : ExitCode::InvalidInput));
  return failure.what;
}

// A graph with x [4, 8] float32 and the given operations (JSON array items).
std::string graphWith(const std::string& operations, const std::string& extra = "") {
  return R"({"tapestry": "graph/v1", "name": "g",
"tensors": {"x": {"dtype": "float32", "shape": [4, 8]}, "w": {"dtype": "float32", "shape": [8, 2]}},
"operations": [)" +
         operations + "]" + extra + "}\n";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> orderNames(const ExpandedGraph& g) {
  std::vector<std::string> out;
  for (std::size_t i : g.order) {
    out.push_back(g.operations[i].name);
  }
  return out;
}

} // namespace

TEST_CASE("names are printable ASCII without space, quote or backslash", "[graph]") {
  for (const char* good : {"x", "_", "fc1", "layer.0.attn", "A_b.9", "1x", "a-b", "a/b", "input.1",
                           "onnx::Conv_193", "/layer1/layer1.0/conv1/Conv_output_0"}) {
    CHECK(isValidName(good));
  }
  for (const char* bad : {"", "a b", "a\tb", "a\"b", "a\\b", "\x7f", "\xc3\xa9"}) {
    CHECK_FALSE(isValidName(bad));
  }
  CHECK(isValidName(std::string(256, 'n')));
  CHECK_FALSE(isValidName(std::string(257, 'n')));
  CHECK(isKnownDType("bfloat16"));
  CHECK_FALSE(isKnownDType("float"));
}

TEST_CASE("a graph expands: shapes, producers, consumers, flops", "[graph]") {
  ExpandedGraph g = expandText(graphWith(
      R"({"name": "fc", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
         {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "y"}})"));
  REQUIRE(g.tensors.size() == 4);
  const Tensor* h = g.findTensor("h");
  REQUIRE(h != nullptr);
  CHECK(h->type.shape == std::vector<std::int64_t>{4, 2});
  CHECK(h->type.dtype == "float32");
  CHECK(h->producer == g.operationIndex("fc"));
  CHECK(h->consumers == std::vector<std::size_t>{*g.operationIndex("act")});
  CHECK(g.findTensor("x")->isGraphInput());
  CHECK(g.findTensor("x")->declared);
  CHECK_FALSE(h->declared);
  const Operation* fc = g.findOperation("fc");
  REQUIRE(fc != nullptr);
  CHECK(fc->application.index.toString() == ZRange::fromShape(ZPoint({4, 2, 8})).toString());
  CHECK(fc->application.reductionDims == std::vector<std::size_t>{2});
  CHECK(fc->application.flops == 2 * 4 * 2 * 8);
  CHECK(g.totalFlops() == 2 * 4 * 2 * 8 + 8);
  CHECK(fc->pointer == "/operations/0");
  // Default outputs: produced and never consumed.
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.tensors[g.outputs[0]].name == "y");
  CHECK(g.findTensor("nope") == nullptr);
}

TEST_CASE("operations run in topological order, ties in file order", "[graph]") {
  // File order: d consumes c's output, c consumes a's; b is independent.
  ExpandedGraph g = expandText(graphWith(
      R"({"name": "d", "kernel": "relu", "inputs": {"input": "c_out"}, "outputs": {"result": "d_out"}},
         {"name": "c", "kernel": "relu", "inputs": {"input": "a_out"}, "outputs": {"result": "c_out"}},
         {"name": "b", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "b_out"}},
         {"name": "a", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "a_out"}})"));
  CHECK(orderNames(g) == std::vector<std::string>{"b", "a", "c", "d"});
  // Operations keep file order; produced tensors follow their producers' order.
  CHECK(g.operations[0].name == "d");
  std::vector<std::string> tensorNames;
  for (const Tensor& t : g.tensors) {
    tensorNames.push_back(t.name);
  }
  CHECK(tensorNames == std::vector<std::string>{"x", "w", "b_out", "a_out", "c_out", "d_out"});
  // Default outputs in tensor order.
  std::vector<std::string> outputs;
  for (std::size_t t : g.outputs) {
    outputs.push_back(g.tensors[t].name);
  }
  CHECK(outputs == std::vector<std::string>{"b_out", "d_out"});
}

TEST_CASE("a cycle is printed in data-flow order from its first operation", "[graph]") {
  std::string error = errorOf(graphWith(
      R"({"name": "free", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "f"}},
         {"name": "b", "kernel": "relu", "inputs": {"input": "a_out"}, "outputs": {"result": "b_out"}},
         {"name": "c", "kernel": "relu", "inputs": {"input": "b_out"}, "outputs": {"result": "c_out"}},
         {"name": "a", "kernel": "add", "inputs": {"A": "c_out", "B": "f"}, "outputs": {"result": "a_out"}})"));
  CHECK_THAT(error, StartsWith("g.json:4:10: error: at /operations/1: cycle: b -> c -> a -> b\n"));
  CHECK_THAT(
      errorOf(graphWith(
          R"({"name": "me", "kernel": "add", "inputs": {"A": "x", "B": "y"}, "outputs": {"result": "y"}})")),
      Contains("cycle: me -> me"));
}

TEST_CASE("validation errors are located and say what is wrong", "[graph]") {
  SECTION("unknown kernel, with a hint") {
    CHECK_THAT(
        errorOf(graphWith(R"({"name": "a", "kernel": "relux", "inputs": {"input": "x"}})")),
        Contains("at /operations/0/kernel: unknown kernel \"relux\" (did you mean \"relu\"?)"));
  }
  SECTION("unknown tensor") {
    CHECK_THAT(
        errorOf(graphWith(R"({"name": "a", "kernel": "relu", "inputs": {"input": "xx"}})")),
        Contains("at /operations/0/inputs/input: unknown tensor \"xx\": no operation produces "
                 "it and \"tensors\" does not declare it (did you mean \"x\"?)"));
  }
  SECTION("two producers") {
    CHECK_THAT(
        errorOf(graphWith(
            R"({"name": "a", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "y"}},
                      {"name": "b", "kernel": "neg", "inputs": {"input": "x"}, "outputs": {"result": "y"}})")),
        Contains("at /operations/1/outputs/result: tensor \"y\" has two producers: a (at "
                 "/operations/0) and b"));
  }
  SECTION("a produced tensor may not also be a declared input of another shape") {
    std::string error = errorOf(graphWith(
        R"({"name": "a", "kernel": "relu", "inputs": {"input": "x"}, "outputs": {"result": "w"}})"));
    CHECK_THAT(error, Contains("at /tensors/w/shape: tensor w is declared as [8, 2] float32, but a "
                               "(relu) produces [4, 8] float32"));
    CHECK_THAT(error, Contains("note: at /operations/0: a produces w here"));
  }
  SECTION("metakernel errors are located at the operation") {
    std::string error = errorOf(graphWith(
        R"({"name": "mm", "kernel": "matmul", "inputs": {"X": "w", "W": "w"}, "outputs": {"result": "y"}})"));
    CHECK_THAT(error,
               StartsWith("g.json:3:16: error: at /operations/0: mm (matmul): X and W disagree "
                          "on k (X is [..., m, k], or [..., k, m] with transpose_x; W is [..., k, "
                          "n], or [..., n, k] with transpose_w) ($k = 2, $k_w = 8)\n"));
    CHECK_THAT(error, Contains("note: in kernel matmul, where clause \"$k == $k_w\""));
  }
  SECTION("params") {
    CHECK_THAT(
        errorOf(graphWith(
            R"({"name": "s", "kernel": "softmax", "params": {"axis": 1.5}, "inputs": {"input": "x"}})")),
        Contains("at /operations/0/params/axis: param axis of softmax: expected int, got float"));
    CHECK_THAT(
        errorOf(graphWith(R"({"name": "t", "kernel": "transpose", "inputs": {"input": "x"}})")),
        Contains("at /operations/0: missing param perm of kernel transpose (ints, no default)"));
  }
  SECTION("ports") {
    CHECK_THAT(errorOf(graphWith(R"({"name": "a", "kernel": "relu", "inputs": {"inptu": "x"}})")),
               Contains("kernel relu has no input port \"inptu\" (did you mean \"input\"?)"));
    CHECK_THAT(
        errorOf(graphWith(R"({"name": "a", "kernel": "add", "inputs": {"A": "x"}})")),
        Contains("at /operations/0/inputs: missing input port B of kernel add (its inputs: A, B)"));
  }
  SECTION("shapes") {
    CHECK_THAT(
        errorOf(
            R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float32", "shape": [2, -1]}}, "operations": []})"),
        Contains("g.json:1:90: error: at /tensors/x/shape/1: negative dim -1: dims must be >= 0"));
    CHECK_THAT(
        errorOf(
            R"({"tapestry": "graph/v1", "name": "g", "tensors": {"x": {"dtype": "float32", "shape": [3037000500, 3037000500]}}, "operations": []})"),
        Contains("shape [3037000500, 3037000500] has too many elements"));
  }
  SECTION("the tag") {
    CHECK_THAT(
        errorOf(R"({"tapestry": "plan/v1"})"),
        Contains(
            "at /tapestry: unknown format \"plan/v1\" (expected \"graph/v1\" or \"expanded/v1\")"));
  }
  SECTION("nothing is wrong") {
    CHECK(errorOf(graphWith("")) == "");
  }
}

TEST_CASE("unnamed outputs are OPERATION.PORT", "[graph]") {
  ExpandedGraph g = expandText(graphWith(
      R"({"name": "act", "kernel": "relu", "inputs": {"input": "x"}},
         {"name": "neg", "kernel": "neg", "inputs": {"input": "act.result"}})"));
  REQUIRE(g.findTensor("act.result") != nullptr);
  REQUIRE(g.findTensor("neg.result") != nullptr);
  CHECK(g.findTensor("neg.result")->type.shape == std::vector<std::int64_t>{4, 8});
}

TEST_CASE("list ports: concat inputs and split outputs", "[graph]") {
  ExpandedGraph g = expandText(graphWith(
      R"({"name": "parts", "kernel": "split", "params": {"axis": -1, "sections": [3, 5]},
          "inputs": {"input": "x"}, "outputs": {"results": ["p0", "p1"]}},
         {"name": "join", "kernel": "concat", "params": {"axis": 1},
          "inputs": {"tensors": ["p1", "p0"]}, "outputs": {"result": "y"}})"));
  CHECK(g.findTensor("p0")->type.shape == std::vector<std::int64_t>{4, 3});
  CHECK(g.findTensor("p1")->type.shape == std::vector<std::int64_t>{4, 5});
  CHECK(g.findTensor("y")->type.shape == std::vector<std::int64_t>{4, 8});
  const Operation* join = g.findOperation("join");
  REQUIRE(join->inputs.size() == 1);
  CHECK(join->inputs[0].list);
  CHECK(join->inputs[0].tensors ==
        std::vector<std::size_t>{*g.tensorIndex("p1"), *g.tensorIndex("p0")});
  CHECK(join->application.inputs[0].ipfs.size() == 2);
}

TEST_CASE("formatJson: scalar arrays inline, containers inline when they fit", "[graph]") {
  Json j = Json::parse(R"({"a": [1, 2, 3], "b": {"c": "d"}, "e": [], "f": {},
                           "long": [[1, 2], [3, 4]], "s": "q\"uote\u00e9"})");
  CHECK(json::format(j, 200) ==
        "{\"a\": [1, 2, 3], \"b\": {\"c\": \"d\"}, \"e\": [], \"f\": {}, \"long\": "
        "[[1, 2], [3, 4]], \"s\": \"q\\\"uote\xC3\xA9\"}\n");
  CHECK(json::format(j, 20) == "{\n"
                               "  \"a\": [1, 2, 3],\n"
                               "  \"b\": {\"c\": \"d\"},\n"
                               "  \"e\": [],\n"
                               "  \"f\": {},\n"
                               "  \"long\": [\n"
                               "    [1, 2],\n"
                               "    [3, 4]\n"
                               "  ],\n"
                               "  \"s\": \"q\\\"uote\xC3\xA9\"\n"
                               "}\n");
  // A long array of scalars stays on one line whatever the width.
  CHECK(json::format(Json::parse("[1, 2, 3, 4, 5, 6, 7, 8, 9]"), 4) ==
        "[1, 2, 3, 4, 5, 6, 7, 8, 9]\n");
}

TEST_CASE("the writer is deterministic and expanded graphs round-trip", "[graph]") {
  std::string text = graphWith(
      R"({"name": "fc", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
         {"name": "sm", "kernel": "softmax", "inputs": {"input": "h"}, "outputs": {"result": "y"}})");
  std::string first = writeExpanded(expandText(text));
  CHECK(first == writeExpanded(expandText(text)));
  CHECK(first.back() == '\n');
  Json doc = Json::parse(first);
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) {
    keys.push_back(key);
  }
  CHECK(keys == std::vector<std::string>{"tapestry", "name", "tensors", "operations", "outputs"});
  CHECK(doc["tapestry"] == "expanded/v1");
  CHECK(doc["tensors"]["h"]["producer"] == "fc");
  CHECK(doc["tensors"]["x"]["producer"].is_null());
  CHECK(doc["operations"][1]["params"] == Json::parse(R"({"axis": -1})")); // defaults resolved
  CHECK(
      doc["operations"][0]["ipf"]["inputs"]["X"][0] ==
      Json::parse(
          R"({"affineMap": {"projection": [[1, 0, 0], [0, 0, 1]], "offset": [0, 0]}, "shape": [1, 1]})"));
  // Expanding the expanded file gives it back byte for byte.
  CHECK(writeExpanded(expandText(first)) == first);
  // An edited expanded field is caught.
  std::string edited = first;
  edited.replace(edited.find("\"flops\": 128"), 12, "\"flops\": 129");
  CHECK_THAT(errorOf(edited),
             Contains("at /operations/0/flops: the stored flops 129 disagrees with "
                      "the expansion, which gives 128"));
}

TEST_CASE("the example graphs expand to their golden files", "[graph]") {
  for (const char* name : {"mlp", "transformer_block", "convnet", "concat_split_embedding"}) {
    INFO(name);
    std::string golden =
        readFile(std::string(TAPESTRY_TESTDATA_DIR) + "/expanded/" + name + ".expanded.json");
    ExpandedGraph g =
        loadAndExpand(std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name + ".json", lib());
    CHECK(writeExpanded(g) == golden);
  }
}

TEST_CASE("the expand command writes atomically and only on success", "[graph]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tapestry-graph-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ExpandConfig config;
  config.graphPath = std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/mlp.json";
  config.outputPath = (dir / "out.json").string();
  std::ostringstream out, err;
  CHECK(expandCommand(config, out, err) == 0);
  CHECK(readFile(config.outputPath) ==
        readFile(std::string(TAPESTRY_TESTDATA_DIR) + "/expanded/mlp.expanded.json"));
  CHECK_THAT(out.str(), StartsWith("expanded mlp: 6 operations, 13 tensors, 68.6 MFLOP -> "));
  CHECK(err.str().empty());

  config.json = true;
  out.str("");
  CHECK(expandCommand(config, out, err) == 0);
  Json summary = Json::parse(out.str());
  CHECK(summary["status"] == "ok");
  CHECK(summary["operations"] == 6);
  CHECK(summary["flops"] == 68587264);

  fs::remove(config.outputPath);
  config.graphPath = std::string(TAPESTRY_TESTDATA_DIR) + "/bad/graphs/cycle.json";
  CHECK_THROWS_AS(expandCommand(config, out, err), Error);
  CHECK_FALSE(fs::exists(config.outputPath));
  CHECK(fs::is_empty(dir)); // no temporary file left either
  fs::remove_all(dir);
}

TEST_CASE("writeExpanded lays out exactly what json::format(toJson(g)) does", "[graph]") {
  for (const char* name : {"mlp", "transformer_block", "convnet", "concat_split_embedding"}) {
    INFO(name);
    ExpandedGraph g =
        loadAndExpand(std::string(TAPESTRY_TESTDATA_DIR) + "/graphs/" + name + ".json", lib());
    CHECK(writeExpanded(g) == json::format(toJson(g), kExpandedWidth));
    for (std::size_t width : {0, 40, 80, 200, 100000}) {
      // Any width: the same document, reparsed.
      CHECK(Json::parse(json::format(toJson(g), width)) == toJson(g));
    }
  }
}

TEST_CASE("small graphs are laid out whole, possibly on one line", "[graph]") {
  ExpandedGraph empty =
      expandText(R"({"tapestry": "graph/v1", "name": "e", "tensors": {}, "operations": []})");
  CHECK(writeExpanded(empty) == "{\"tapestry\": \"expanded/v1\", \"name\": \"e\", \"tensors\": {}, "
                                "\"operations\": [], \"outputs\": []}\n");
  CHECK(writeExpanded(empty) == json::format(toJson(empty), kExpandedWidth));
  ExpandedGraph inputs = expandText(graphWith(""));
  CHECK(writeExpanded(inputs) == json::format(toJson(inputs), kExpandedWidth));
  ExpandedGraph one =
      expandText(graphWith(R"({"name": "a", "kernel": "relu", "inputs": {"input": "x"}})"));
  CHECK(writeExpanded(one) == json::format(toJson(one), kExpandedWidth));
}

TEST_CASE("formatJson writes scalars as nlohmann's dump does", "[graph]") {
  std::string control;
  for (int c = 1; c < 0x20; ++c) {
    control += static_cast<char>(c);
  }
  Json values = Json::array({nullptr, true, false, 0, -7, std::numeric_limits<std::int64_t>::min(),
                             std::numeric_limits<std::uint64_t>::max(), 1e-05, 0.5, -2.25e300,
                             "plain", "q\"b\\s/\x7f", control, "caf\xC3\xA9 \xE2\x82\xAC"});
  for (const Json& v : values) {
    CHECK(json::format(v, kExpandedWidth) == v.dump() + "\n");
  }
  std::string joined;
  for (const Json& v : values) {
    joined += (joined.empty() ? "[" : ", ") + v.dump();
  }
  CHECK(json::format(values, 1) == joined + "]\n"); // arrays of scalars stay on one line
  Json object = {{control, 1}};
  CHECK(json::format(object, 100000) == "{" + Json(control).dump() + ": 1}\n");
}

TEST_CASE("constant graph inputs: loaded, kept through expansion, written only when true",
          "[graph]") {
  const std::string text = R"({"tapestry": "graph/v1", "name": "g",
"tensors": {"x": {"dtype": "float32", "shape": [4, 8]},
            "w": {"dtype": "float32", "shape": [8, 2], "constant": true},
            "b": {"dtype": "float32", "shape": [4, 2], "constant": false}},
"operations": [{"name": "fc", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
               {"name": "add", "kernel": "add", "inputs": {"A": "h", "B": "b"}, "outputs": {"result": "y"}}]}
)";
  const ExpandedGraph g = expandText(text);
  auto tensor = [&](const std::string& name) -> const Tensor& {
    for (const Tensor& t : g.tensors) {
      if (t.name == name) {
        return t;
      }
    }
    FAIL("no tensor " << name);
    throw;
  };
  CHECK(tensor("w").constant);
  CHECK_FALSE(tensor("x").constant);
  CHECK_FALSE(tensor("b").constant);
  CHECK_FALSE(tensor("h").constant);
  const std::string expanded = writeExpanded(g);
  const Json doc = Json::parse(expanded);
  CHECK(doc["tensors"]["w"]["constant"] == true);
  CHECK_FALSE(doc["tensors"]["x"].contains("constant"));
  CHECK_FALSE(doc["tensors"]["b"].contains("constant"));
  CHECK(writeExpanded(expandText(expanded)) == expanded);
  CHECK(writeExpanded(g) == json::format(toJson(g), kExpandedWidth));
  // Only graph inputs can be constant, and the flag is a boolean.
  std::string produced = text;
  produced.replace(produced.find(R"("b": {)"), 0,
                   R"("y": {"dtype": "float32", "shape": [4, 2], "constant": true}, )");
  CHECK_THAT(errorOf(produced),
             Contains("tensor \"y\" is produced by add; only graph inputs can be "
                      "constant"));
  std::string notBool = text;
  notBool.replace(notBool.find("\"constant\": true"), 16, "\"constant\": 1");
  CHECK_THAT(errorOf(notBool), Contains("\"constant\" must be true or false, not 1"));
}

TEST_CASE("an optional input left out: no port, no IPFs, and the file round-trips", "[graph]") {
  const std::string text = R"({"tapestry": "graph/v1", "name": "g",
"tensors": {"x": {"dtype": "float32", "shape": [1, 2, 5, 5]},
            "w": {"dtype": "float32", "shape": [3, 2, 3, 3]},
            "b": {"dtype": "float32", "shape": [3]}},
"operations": [{"name": "plain", "kernel": "conv2d", "inputs": {"input": "x", "weight": "w"}, "outputs": {"result": "y"}},
               {"name": "biased", "kernel": "conv2d", "inputs": {"input": "x", "weight": "w", "bias": "b"}, "outputs": {"result": "z"}}]}
)";
  const ExpandedGraph g = expandText(text);
  const Operation& plain = g.operations[0];
  const Operation& biased = g.operations[1];
  REQUIRE(plain.inputs.size() == 3); // template order, parallel to the application
  CHECK(plain.inputs[2].port == "bias");
  CHECK(plain.inputs[2].tensors.empty());
  CHECK(plain.application.inputs[2].ipfs.empty());
  REQUIRE(biased.inputs[2].tensors.size() == 1);
  CHECK(g.tensors[biased.inputs[2].tensors[0]].name == "b");
  CHECK(g.findTensor("b")->consumers == std::vector<std::size_t>{1});
  CHECK(plain.application.index == biased.application.index);

  const std::string expanded = writeExpanded(g);
  const Json doc = Json::parse(expanded);
  CHECK(doc["operations"][0]["inputs"] == Json::parse(R"({"input": "x", "weight": "w"})"));
  CHECK_FALSE(doc["operations"][0]["ipf"]["inputs"].contains("bias"));
  CHECK(doc["operations"][1]["inputs"]["bias"] == "b");
  CHECK(doc["operations"][1]["ipf"]["inputs"]["bias"].size() == 1);
  CHECK(writeExpanded(expandText(expanded)) == expanded);
  CHECK(writeExpanded(g) == json::format(toJson(g), kExpandedWidth));

  // The other ports are not optional: leaving one out fails where it did.
  std::string noWeight = text;
  noWeight.replace(noWeight.find(R"(, "weight": "w"})"), 16, "}");
  CHECK_THAT(errorOf(noWeight),
             Contains("at /operations/0/inputs: missing input port weight of kernel conv2d (its "
                      "inputs: input, weight, bias (optional))"));
  // A given optional port is matched like any other.
  std::string wrongBias = text;
  wrongBias.replace(wrongBias.find(R"("shape": [3]})"), 13, R"("shape": [4]})");
  CHECK_THAT(errorOf(wrongBias), Contains("$O is 3 from weight but 4 from bias"));
}

// The graph a plan embeds (plan::decodePlan) asks for costs to be lenient: a
// kernel whose cost formula changed since the plan was written gives other
// flops or bytes, a warning; anything else that differs is still an error.
TEST_CASE("costs that differ are warnings where asked for", "[graph]") {
  const std::string text = R"({"tapestry": "graph/v1", "name": "g",
"tensors": {"x": {"dtype": "float32", "shape": [4, 8]}, "w": {"dtype": "float32", "shape": [8, 6]}},
"operations": [{"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "y"}},
               {"name": "r", "kernel": "relu", "inputs": {"input": "y"}, "outputs": {"result": "z"}}]}
)";
  const std::string expanded = writeExpanded(expandText(text));
  auto lenient = [](const Json& edited, std::vector<Diagnostic>& warnings) {
    json::Document doc = json::Document::parse(SourceFile("g.json", edited.dump(2)));
    return expand(decodeGraph(json::Value(doc)), lib(), &warnings);
  };
  Json flops = Json::parse(expanded);
  flops["operations"][0]["flops"] = 1;
  flops["operations"][1]["flops"] = 2;
  CHECK_THAT(errorOf(flops.dump()), Contains("at /operations/0/flops: the stored flops 1"));
  std::vector<Diagnostic> warnings;
  const ExpandedGraph g = lenient(flops, warnings);
  REQUIRE(warnings.size() == 1); // the first difference
  CHECK(warnings[0].severity == Severity::Warning);
  CHECK_THAT(warnings[0].message, StartsWith("at /operations/0/flops: the stored flops 1 "
                                             "disagrees with the expansion, which gives 384"));
  CHECK(warnings[0].location.line > 0);
  REQUIRE(warnings[0].notes.size() == 1);
  CHECK_THAT(warnings[0].notes[0].message, Contains("this version's costs are used"));
  CHECK(writeExpanded(g) == expanded); // the expansion's costs
  // A missing cost too.
  Json missing = Json::parse(expanded);
  missing["operations"][1].erase("flops");
  warnings.clear();
  lenient(missing, warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].message == "at /operations/1: the stored operation has no flops, which the "
                               "expansion gives");
  // Not the structure: an IPF, the index, the bindings.
  Json index = Json::parse(expanded);
  index["operations"][0]["index"]["end"][0] = 3;
  warnings.clear();
  CHECK_THROWS_AS(lenient(index, warnings), Error);
}

TEST_CASE("an expanded file written before its kernel gained a defaulted param still loads",
          "[graph]") {
  // conv2d_act gained silu and hard_swish (default false) after plans with it
  // were written: such a file has neither in its params nor its bindings.
  const std::string text = R"({"tapestry": "graph/v1", "name": "g",
"tensors": {"x": {"dtype": "float32", "shape": [1, 2, 5, 5]}, "w": {"dtype": "float32", "shape": [3, 2, 3, 3]}},
"operations": [{"name": "c", "kernel": "conv2d_act", "params": {"min": 0}, "inputs": {"input": "x", "weight": "w"}, "outputs": {"result": "y"}}]}
)";
  const std::string expanded = writeExpanded(expandText(text));
  Json older = Json::parse(expanded);
  Json& op = older["operations"][0];
  REQUIRE(op["bindings"]["silu"] == false);
  for (const char* gained : {"silu", "hard_swish"}) {
    op["params"].erase(gained);
    op["bindings"].erase(gained);
  }
  const ExpandedGraph g = expandText(older.dump());
  CHECK_FALSE(g.operations[0].application.bindings.find("silu")->value.asBool());
  // It is written back as the kernel is now.
  CHECK(writeExpanded(g) == expanded);

  // Only params at their defaults may be missing: a binding the file has
  // must agree, and a missing binding that is no param (a let) is an edit.
  Json wrong = older;
  wrong["operations"][0]["bindings"]["OH"] = 4;
  CHECK_THAT(errorOf(wrong.dump()), Contains("at /operations/0/bindings: the stored bindings {"));
  Json noLet = older;
  noLet["operations"][0]["bindings"].erase("OH");
  CHECK_THAT(errorOf(noLet.dump()), Contains("disagrees with the expansion"));
  // A param the operation sets is bound as set: its binding cannot be missing.
  Json set = older;
  set["operations"][0]["params"]["silu"] = true;
  CHECK_THAT(errorOf(set.dump()), Contains("disagrees with the expansion"));
}
