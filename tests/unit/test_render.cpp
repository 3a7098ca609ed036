// Tests for core/render: the compact IPF form, escaping and units, the DOT text
// of a tiny graph (stable, escaped), --collapse on repeated blocks, the node
// limit, the plan view of a built plan, the front view of a small front file,
// real svg/png/pdf output through gvc, and the render command's errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/driver/render_command.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"
#include "core/render/graphviz.hpp"
#include "core/render/render.hpp"
#include "tests/unit/fixtures.hpp"

using namespace tapestry;
using namespace tapestry::testing;
using namespace tapestry::render;
using namespace tapestry::driver;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// x [8, 4] @ w [4, 6] -> h [8, 6]; relu(h) -> y.
const char* kMmRelu = R"({"tapestry": "graph/v1", "name": "mm_relu",
  "doc": "a \"tiny\" <graph> & a back\\slash",
  "tensors": {"x": {"dtype": "float32", "shape": [8, 4]}, "w": {"dtype": "float32", "shape": [4, 6]}},
  "operations": [
    {"name": "mm", "kernel": "matmul", "inputs": {"X": "x", "W": "w"}, "outputs": {"result": "h"}},
    {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "y"}}],
  "outputs": ["y"]})";

IndexProjection ipf(ZMatrix projection, ZPoint offset, ZPoint shape) {
  return IndexProjection(ZAffineMap(std::move(projection), std::move(offset)), std::move(shape));
}

std::string stackedGraph(int blocks) {
  std::ostringstream s;
  s << R"({"tapestry": "graph/v1", "name": "stacked", "tensors": {"x": {"dtype": "float32", "shape": [4, 8]})";
  for (int b = 0; b < blocks; ++b) {
    s << ", \"block" << b << ".w\": {\"dtype\": \"float32\", \"shape\": [8, 8]}";
  }
  s << R"(}, "operations": [)";
  std::string cur = "x";
  for (int b = 0; b < blocks; ++b) {
    std::string p = "block" + std::to_string(b);
    s << (b > 0 ? ", " : "") << R"({"name": ")" << p
      << R"(.mm", "kernel": "matmul", "inputs": {"X": ")" << cur << R"(", "W": ")" << p
      << R"(.w"}, "outputs": {"result": ")" << p << R"(.h"}}, )"
      << R"({"name": ")" << p << R"(.act", "kernel": "relu", "inputs": {"input": ")" << p
      << R"(.h"}, "outputs": {"result": ")" << p << R"(.y"}})";
    cur = p + ".y";
  }
  s << R"(, {"name": "head", "kernel": "relu", "inputs": {"input": ")" << cur
    << R"("}, "outputs": {"result": "out"}}]})";
  return s.str();
}

const Node* findNode(const Drawing& d, const std::string& id) {
  for (const Node& n : d.nodes) {
    if (n.id == id) {
      return &n;
    }
  }
  return nullptr;
}

std::string attr(const Attrs& attrs, const std::string& name) {
  for (const Attr& a : attrs) {
    if (a.name == name) {
      return a.value;
    }
  }
  return "";
}

const char* kFront = R"({"tapestry": "front/v1", "graph": "g", "target": "cpu-2", "devices": 2,
  "front": [
    {"objectives": {"time_s": 0.001, "peak_memory_bytes": 4096, "transfer_bytes": 1024, "feasible": true},
     "operations": {"mm": {"split": [2, 1, 1], "devices": [0, 1]}}},
    {"objectives": {"time_s": 0.002, "peak_memory_bytes": 2048, "transfer_bytes": 0, "feasible": true},
     "operations": {"mm": {"split": [1, 1, 1], "devices": [0]}}}],
  "baselines": {"single": {"time_s": 0.002, "peak_memory_bytes": 2048, "transfer_bytes": 0, "feasible": true},
                "tensor_parallel": null},
  "selected": 0, "select": "fastest",
  "search": {"method": "exhaustive", "seed": 0, "iterations": 0, "evaluations": 9, "invalid": 0,
             "threads": 1, "seconds": 0.01}})";

std::string errorOf(const std::function<void()>& f) {
  return failureOf(f).what;
}

} // namespace

TEST_CASE("compact IPF: one index expression or range per tensor dim", "[render]") {
  // linear's X: row i0, every column.
  CHECK(compactIpf(ipf(ZMatrix{{1, 0}, {0, 0}}, ZPoint{0, 0}, ZPoint{1, 784}), {64, 784}) ==
        "[i0, :]");
  CHECK(compactIpf(ipf(ZMatrix{{1, 0}, {0, 1}}, ZPoint{0, 0}, ZPoint{1, 1}), {8, 6}) == "[i0, i1]");
  // conv2d input with stride 2 and padding 1: 2·oh + kh - 1.
  CHECK(compactIpf(ipf(ZMatrix{{0, 2, 1}, {0, 0, 0}}, ZPoint{-1, 2}, ZPoint{1, 4}), {16, 8}) ==
        "[2\xC2\xB7i1+i2-1, 2:6]");
  // A window of 3 elements from i0, a fixed single element, a negative coefficient.
  CHECK(compactIpf(ipf(ZMatrix{{1}, {0}, {-1}}, ZPoint{0, 5, 7}, ZPoint{3, 1, 1}), {10, 10, 10}) ==
        "[i0:+3, 5, -i0+7]");
  // Rank-0 tensor (a scalar read by every point).
  CHECK(compactIpf(ipf(ZMatrix::fromRows({}, 2), ZPoint{}, ZPoint{}), {}) == "[]");
}

TEST_CASE("text helpers escape and format", "[render]") {
  CHECK(htmlEscape("a<b> & \"c\" 'd'") == "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
  CHECK(escapeString("a\\b\nc") == "a\\\\b\\nc");
  CHECK(formatBytes(0) == "0 B");
  CHECK(formatBytes(999) == "999 B");
  CHECK(formatBytes(1024) == "1 KiB");
  CHECK(formatBytes(200704) == "196 KiB");
  CHECK(formatBytes(1605632) == "1.53 MiB");
  CHECK(formatFlops(51412992) == "51.4 MFLOP");
  CHECK(formatSeconds(0.000146) == "146 \xC2\xB5s");
  CHECK(formatSeconds(0.0123) == "12.3 ms");
  CHECK(formatSeconds(2.5) == "2.5 s");
}

TEST_CASE("output formats by extension", "[render]") {
  CHECK(formatFromPath("a/b.svg") == ImageFormat::Svg);
  CHECK(formatFromPath("B.PNG") == ImageFormat::Png);
  CHECK(formatFromPath("x.pdf") == ImageFormat::Pdf);
  CHECK(formatFromPath("x.dot") == ImageFormat::Dot);
  CHECK(formatFromPath("x.gv") == ImageFormat::Dot);
  CHECK_FALSE(formatFromPath("x.jpg").has_value());
  CHECK_FALSE(formatFromPath("dir.svg/x").has_value());
  CHECK_FALSE(formatFromPath("noext").has_value());
}

TEST_CASE("graph view: DOT text of a tiny graph", "[render]") {
  graph::ExpandedGraph g = expandText(kMmRelu);
  Drawing d = graphView(g, {});
  CHECK(d.contentNodes == 6); // x, w, h, y and mm, act
  std::string dot = writeDot(d);
  CHECK(writeDot(graphView(g, {})) == dot); // stable

  CHECK_THAT(dot, StartsWith("digraph mm_relu {"));
  CHECK_THAT(dot, Contains("\"t:x\" -> \"op:mm\"\t[label=\"X: [i0, i2]\""));
  CHECK_THAT(dot, Contains("\"t:w\" -> \"op:mm\"\t[label=\"W: [i2, i1]\""));
  CHECK_THAT(dot, Contains("\"op:mm\" -> \"t:h\"\t[label=\"result: [i0, i1]\""));
  CHECK_THAT(dot, Contains("zr[0:8, 0:6, 0:4]  sum over i2"));
  CHECK_THAT(dot, Contains("float32 [8, 4] \xC2\xB7 128 B"));
  // The graph output has a double border; graph inputs are grey.
  CHECK_THAT(attr(findNode(d, "t:y")->attrs, "peripheries"), Contains("2"));
  CHECK(attr(findNode(d, "t:x")->attrs, "fillcolor") == "#eeeeee");
  // Operations take palette colours by their index in the file.
  CHECK(attr(findNode(d, "op:mm")->attrs, "fillcolor") == paletteColor(0));
  CHECK(attr(findNode(d, "op:act")->attrs, "fillcolor") == paletteColor(1));
  // The doc string is escaped for DOT (quotes by cgraph, the backslash doubled).
  CHECK_THAT(dot, Contains(R"(tooltip="a \"tiny\" <graph> & a back\\slash")"));
  // A legend, and --rankdir.
  CHECK_THAT(dot, Contains("subgraph cluster_legend"));
  ViewOptions lr;
  lr.rankdir = "LR";
  CHECK_THAT(writeDot(graphView(g, lr)), Contains("rankdir=LR"));
}

TEST_CASE("graph view: --collapse merges repeated blocks and folds weights", "[render]") {
  graph::ExpandedGraph g = expandText(stackedGraph(6));
  Drawing full = graphView(g, {});
  CHECK(full.contentNodes == 1 + 6 + 6 * 4 + 2); // x, weights, 2 ops + 2 tensors per block, head
  ViewOptions options;
  options.collapse = true;
  Drawing d = graphView(g, options);
  // x, the merged blocks, block5.y, head, out.
  CHECK(d.contentNodes == 5);
  const Node* blocks = findNode(d, "block:block0");
  REQUIRE(blocks != nullptr);
  std::string label = attr(blocks->attrs, "label");
  CHECK_THAT(label, Contains("block0 \xE2\x80\xA6 block5"));
  CHECK_THAT(label, Contains("\xC3\x97"
                             "6"));
  CHECK_THAT(label, Contains("6 weights"));
  CHECK(attr(blocks->attrs, "shape") == "box3d");
  CHECK(findNode(d, "t:block5.y") != nullptr);
  CHECK(findNode(d, "t:block2.y") == nullptr);

  // Different blocks are not merged: block1 computes something else.
  std::string text = stackedGraph(3);
  std::string::size_type at = text.find("\"block1.act\", \"kernel\": \"relu\"");
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string("\"block1.act\", \"kernel\": \"relu\"").size(),
               "\"block1.act\", \"kernel\": \"gelu\"");
  Drawing mixed = graphView(expandText(text), options);
  CHECK(findNode(mixed, "block:block0") != nullptr);
  CHECK(findNode(mixed, "block:block1") != nullptr);
  CHECK(findNode(mixed, "block:block2") != nullptr);
}

TEST_CASE("the node limit: a clear error that suggests --collapse", "[render]") {
  graph::ExpandedGraph g = expandText(stackedGraph(6));
  ViewOptions options;
  options.maxNodes = 10;
  Drawing d = graphView(g, options);
  std::string error = errorOf([&] { checkNodeLimit(d, options, "graph", "s.json"); });
  CHECK(error == "s.json: error: graph has 33 nodes, more than --max-nodes 10 (use --collapse)\n");
  options.collapse = true;
  CHECK_NOTHROW(checkNodeLimit(graphView(g, options), options, "graph", "s.json"));
}

TEST_CASE("plan view: device clusters, shards, transfers with bytes", "[render]") {
  graph::ExpandedGraph g = expandText(kMmRelu);
  cost::Target target = cost::loadTarget("cpu-2");
  // mm split by rows on both devices, act whole on device 0: device 1's rows move.
  plan::PlanChoice choice{{plan::OpChoice{{2, 1, 1}, {0, 1}}, plan::OpChoice{{1, 1}, {0}}}};
  plan::ShardPlan p = plan::buildPlan(g, target.deviceCount(), choice);
  cost::Simulation s = cost::simulate(g, target, p);
  plan::LoadedPlan loaded{g, target, choice, p, s, std::nullopt, {}};

  Drawing d = planView(loaded, {});
  std::string dot = writeDot(d);
  CHECK_THAT(dot, Contains("subgraph cluster_dev0"));
  CHECK_THAT(dot, Contains("subgraph cluster_dev1"));
  CHECK_THAT(dot, Contains("subgraph cluster_host"));
  CHECK(findNode(d, "s:mm#0") != nullptr);
  CHECK(findNode(d, "s:mm#1") != nullptr);
  CHECK(findNode(d, "s:act#0") != nullptr);
  // h's rows 4..8 go from device 1 to device 0: 4 x 6 float32.
  CHECK_THAT(dot, Contains("\"s:mm#1\" -> \"s:act#0\"\t[color=\"#d62728\""));
  CHECK_THAT(dot, Contains("label=\"h\\n96 B\""));
  CHECK_THAT(dot, Contains("zr[4:8, 0:6, 0:4]"));

  ViewOptions collapse;
  collapse.collapse = true;
  Drawing c = planView(loaded, collapse);
  CHECK(findNode(c, "s:mm@0") != nullptr);
  CHECK(findNode(c, "host:inputs") != nullptr);
}

// On a target that forwards inputs, each plan's tooltip says whether it does.
TEST_CASE("front view: the tooltips say which plans forward inputs", "[render]") {
  std::string text = kFront;
  const std::string first = R"("operations": {"mm": {"split": [2, 1, 1])";
  const std::string second = R"("operations": {"mm": {"split": [1, 1, 1])";
  text.replace(text.find(first), 0, R"("relay": true, )");
  text.replace(text.find(second), 0, R"("relay": false, )");
  json::Document doc = json::Document::parse(SourceFile("f.json", text));
  const Drawing d = frontView(json::Value(doc), {});
  CHECK_THAT(attr(findNode(d, "plan0")->attrs, "tooltip"),
             Contains("on [0,1]\\ninputs forwarded between devices"));
  CHECK_THAT(attr(findNode(d, "plan1")->attrs, "tooltip"),
             Contains("on [0]\\ninputs sent to each device"));
  json::Document plain = json::Document::parse(SourceFile("g.json", kFront));
  CHECK_THAT(attr(findNode(frontView(json::Value(plain), {}), "plan0")->attrs, "tooltip"),
             !Contains("inputs"));
}

TEST_CASE("front view: points, baselines, the selected plan", "[render]") {
  json::Document doc = json::Document::parse(SourceFile("f.json", kFront));
  Drawing d = frontView(json::Value(doc), {});
  CHECK(d.layout == "nop");
  CHECK(d.contentNodes == 3); // two plans, one valid baseline
  CHECK(findNode(d, "plan0") != nullptr);
  const Node* selected = findNode(d, "selected"); // the ring around plan 0
  REQUIRE(selected != nullptr);
  CHECK(attr(selected->attrs, "color") == "#d62728");
  CHECK(attr(selected->attrs, "pos") == attr(findNode(d, "plan0")->attrs, "pos"));
  CHECK(findNode(d, "baseline:single") != nullptr);
  CHECK(findNode(d, "baseline:tensor_parallel") == nullptr);
  std::string dot = writeDot(d);
  CHECK_THAT(dot, Contains("selected #0 (fastest)"));
  CHECK_THAT(dot, Contains("not a valid plan here"));
  CHECK(writeDot(frontView(json::Value(doc), {})) == dot);

  json::Document bad = json::Document::parse(
      SourceFile("bad.json", R"({"tapestry": "front/v1", "front": [], "selected": 3})"));
  CHECK_THAT(errorOf([&] { frontView(json::Value(bad), {}); }),
             Contains("bad.json:1:51: error: at /selected: selected plan 3 is not on the front"));
}

TEST_CASE("gvc renders svg, png and pdf in memory", "[render]") {
  graph::ExpandedGraph g = expandText(kMmRelu);
  Drawing d = graphView(g, {});
  std::string svg = renderImage(d, ImageFormat::Svg).bytes;
  CHECK_THAT(svg, StartsWith("<?xml"));
  CHECK_THAT(svg, Contains("</svg>"));
  std::string png = renderImage(d, ImageFormat::Png).bytes;
  CHECK(png.substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
  std::string pdf = renderImage(d, ImageFormat::Pdf).bytes;
  CHECK_THAT(pdf, StartsWith("%PDF"));

  json::Document doc = json::Document::parse(SourceFile("f.json", kFront));
  CHECK_THAT(renderImage(frontView(json::Value(doc), {}), ImageFormat::Svg).bytes,
             Contains("</svg>"));
}

// Clusters c0..c(n-1) of `perCluster` nodes "n<c>_<i>" each, and labelled edges
// "n<c>_<i>->n<c>_<i>" (found by a random search for drawings dot 2.43 mishandles).
Drawing clusteredDrawing(int clusters, int perCluster, const std::vector<std::string>& edges) {
  Drawing d;
  d.name = "clustered";
  for (int c = 0; c < clusters; ++c) {
    Subgraph sub;
    sub.id = "c" + std::to_string(c);
    sub.attrs = {{"label", sub.id}};
    for (int i = 0; i < perCluster; ++i) {
      std::string id = "n" + std::to_string(c) + "_" + std::to_string(i);
      d.addNode(id);
      sub.nodes.push_back(id);
    }
    d.subgraphs.push_back(std::move(sub));
  }
  for (std::size_t k = 0; k < edges.size(); ++k) {
    std::size_t arrow = edges[k].find("->");
    d.addEdge(edges[k].substr(0, arrow), edges[k].substr(arrow + 2),
              {{"label", "e" + std::to_string(k)}});
  }
  return d;
}

TEST_CASE("outer labels: only edges between clusters lose their ranked label", "[render]") {
  Drawing d;
  for (const char* id : {"a", "b", "c", "out"}) {
    d.addNode(id);
  }
  Subgraph node0{"node0", true, {}, {}, {}};
  node0.children.push_back(Subgraph{"dev0", true, {}, {"a", "b"}, {}});
  node0.children.push_back(Subgraph{"dev1", true, {}, {"c"}, {}});
  d.subgraphs.push_back(std::move(node0));
  d.addEdge("a", "b", {{"label", "same device"}, {"color", "red"}});
  d.addEdge("b", "c", {{"label", "other device"}});
  d.addEdge("out", "a", {{"label", "from outside"}});
  d.addEdge("c", "out", {{"color", "blue"}});

  Drawing outer = withOuterLabels(d);
  REQUIRE(outer.edges.size() == 4);
  CHECK(outer.edges[0].attrs[0].name == "label");
  CHECK(outer.edges[0].attrs[1].name == "color");
  CHECK(outer.edges[1].attrs[0].name == "xlabel");
  CHECK(outer.edges[1].attrs[0].value == "other device");
  CHECK(outer.edges[2].attrs[0].name == "xlabel");
  CHECK(outer.edges[3].attrs[0].name == "color");
  CHECK(outer.subgraphs.size() == 1);
  CHECK(outer.nodes.size() == 4);
}

TEST_CASE("dot 2.43's cluster bugs: a finished layout is kept, a failed one retried", "[render]") {
  // dot frees a rank array twice while freeing this layout (after making room
  // for a label of an edge within one rank); the layout itself is sound and is
  // never freed, so the picture comes from the first attempt.
  Drawing freedTwice = clusteredDrawing(2, 2, {"n1_0->n1_1", "n1_0->n0_1", "n0_0->n1_1"});
  Rendered first = renderImage(freedTwice, ImageFormat::Svg);
  CHECK_FALSE(first.note.has_value());
  CHECK_THAT(first.bytes, Contains("cluster_c1"));

  // dot's cluster ranking fails on this one ("trouble in init_rank") because of
  // the nodes it ranks for labels of edges between clusters; with those labels
  // outside the layout, the clusters keep their boxes.
  Drawing initRank = clusteredDrawing(
      6, 4, {"n5_1->n4_3", "n0_2->n4_3", "n5_1->n5_3", "n4_0->n5_0", "n5_0->n0_1",
             "n3_2->n2_3", "n4_0->n0_3", "n5_1->n3_2", "n2_1->n4_3", "n3_0->n5_3",
             "n3_1->n3_2", "n1_0->n0_1", "n3_1->n0_2", "n4_1->n0_2", "n2_1->n2_3",
             "n5_0->n5_2", "n3_1->n4_2", "n4_2->n2_3", "n5_0->n5_2", "n0_1->n4_2"});
  Rendered retried = renderImage(initRank, ImageFormat::Svg);
  REQUIRE(retried.note.has_value());
  CHECK_THAT(*retried.note, Contains("trouble in init_rank"));
  CHECK_THAT(*retried.note,
             Contains("; placed the labels of edges between clusters beside them instead"));
  for (int c = 0; c < 6; ++c) {
    CHECK_THAT(retried.bytes, Contains("<title>cluster_c" + std::to_string(c) + "</title>"));
  }
  CHECK_THAT(retried.bytes, Contains(">e19</text>"));
}

TEST_CASE("render command: usage errors, atomic output, views by tag", "[render]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "tapestry_test_render";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path graphFile = dir / "g.json";
  std::ofstream(graphFile) << kMmRelu;
  std::ostringstream out;
  std::ostringstream err;

  RenderConfig config;
  config.inputPath = graphFile.string();
  config.outputPath = (dir / "g.jpg").string();
  try {
    renderCommand(config, out, err);
    FAIL("expected a usage error");
  } catch (const UsageError& e) {
    CHECK_THAT(e.message(), Contains("expected .svg, .png, .pdf or .dot"));
  }
  CHECK_FALSE(fs::exists(dir / "g.jpg"));

  config.outputPath = (dir / "g.svg").string();
  config.view = View::Plan;
  CHECK_THROWS_AS(renderCommand(config, out, err), UsageError);

  config.view.reset();
  config.options.maxNodes = 2;
  CHECK_THROWS_WITH(renderCommand(config, out, err), Contains("more than --max-nodes 2"));
  CHECK_FALSE(fs::exists(dir / "g.svg"));

  config.options.maxNodes = 100;
  CHECK(renderCommand(config, out, err) == 0);
  CHECK(fs::exists(dir / "g.svg"));
  CHECK_THAT(out.str(), Contains("rendered mm_relu (graph view, 6 nodes)"));

  std::ostringstream dotOut;
  config.outputPath = "-";
  config.quiet = true;
  CHECK(renderCommand(config, dotOut, err) == 0);
  CHECK_THAT(dotOut.str(), StartsWith("digraph mm_relu {"));
  fs::remove_all(dir);
}

TEST_CASE("render: a large drawing whose full layout runs out of time is drawn collapsed",
          "[render]") {
  Drawing full;
  full.name = "big";
  full.contentNodes = kCollapseFallbackNodes;
  Drawing small;
  small.name = "big";
  small.contentNodes = 12;
  std::vector<std::pair<std::size_t, double>> calls; // (nodes, seconds) per layout
  // A stand-in for Graphviz: drawings of more than `fits` nodes run past
  // any deadline.
  auto layoutFitting = [&calls](std::size_t fits) {
    return [&calls, fits](const Drawing& d, double seconds) {
      calls.emplace_back(d.contentNodes, seconds);
      if (d.contentNodes > fits) {
        throw LayoutTimeout("timed out");
      }
      Rendered r;
      r.bytes = "<svg " + std::to_string(d.contentNodes) + ">";
      return r;
    };
  };
  int made = 0;
  auto collapse = [&made, &small] {
    ++made;
    return small;
  };

  SECTION("the full layout gets a quarter of the time, the collapsed one the rest") {
    const LaidOut laid = layOutOrCollapse(full, collapse, 120, layoutFitting(100));
    CHECK(calls == std::vector<std::pair<std::size_t, double>>{{300, 30}, {12, 90}});
    CHECK(laid.collapsedInstead);
    CHECK(laid.drawing.contentNodes == 12);
    CHECK(laid.rendered.bytes == "<svg 12>");
    REQUIRE(laid.rendered.note.has_value());
    CHECK(*laid.rendered.note ==
          "the drawing of 300 nodes did not lay out within 30 s (a quarter of "
          "--layout-seconds); drew it collapsed (12 nodes) instead: --collapse asks for that "
          "at once, a longer --layout-seconds gives the full drawing more time");
  }
  SECTION("a full layout in time is kept, and nothing collapsed is made") {
    const LaidOut laid = layOutOrCollapse(full, collapse, 120, layoutFitting(1000));
    CHECK(calls == std::vector<std::pair<std::size_t, double>>{{300, 30}});
    CHECK_FALSE(laid.collapsedInstead);
    CHECK(laid.rendered.bytes == "<svg 300>");
    CHECK_FALSE(laid.rendered.note.has_value());
    CHECK(made == 0);
  }
  SECTION("both past their time: one error naming both") {
    try {
      layOutOrCollapse(full, collapse, 2, layoutFitting(5));
      FAIL("expected LayoutTimeout");
    } catch (const LayoutTimeout& e) {
      CHECK(std::string(e.what()) ==
            "Graphviz did not lay out the drawing (300 nodes) within 0.5 s, nor its collapsed "
            "drawing (12 nodes) in the 1.5 s left, and was stopped (--layout-seconds)");
    }
  }
  SECTION("smaller drawings, and views that cannot collapse, get the whole time at once") {
    Drawing medium = full;
    medium.contentNodes = kCollapseFallbackNodes - 1;
    CHECK_THROWS_AS(layOutOrCollapse(medium, collapse, 120, layoutFitting(100)), LayoutTimeout);
    CHECK_THROWS_AS(layOutOrCollapse(full, nullptr, 120, layoutFitting(100)), LayoutTimeout);
    CHECK(calls == std::vector<std::pair<std::size_t, double>>{{299, 120}, {300, 120}});
    CHECK(made == 0);
  }
}

TEST_CASE("render: a layout timeout's advice follows the view", "[render]") {
  CHECK(layoutAdvice(View::Graph, true) == ": give it longer, or draw less (--collapse)");
  CHECK(layoutAdvice(View::Graph, false) == ": give it longer");
  CHECK(layoutAdvice(View::Plan, false) ==
        ": give it longer, or draw the plan's graph (--view graph) or schedule (--view timeline)");
  CHECK(layoutAdvice(View::Timeline, false) ==
        ": a plan of fewer shards has fewer tasks to draw; or give it longer");
  CHECK(layoutAdvice(View::Front, false) == ": give it longer");
}
