// A picture before Graphviz sees it: nodes, edges, clusters and their attributes,
// in the order they are written. The views (graph, plan, front) build a Drawing;
// graphviz.cpp turns it into a cgraph graph, then DOT text or a laid-out image.
// Keeping the views free of the C API makes them easy to test and keeps the
// output deterministic: ids and attribute order are exactly what a view chose.
// Also the small text helpers every view uses (escaping, units, the palette).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cost/units.hpp"

namespace tapestry::render {

// One attribute. `html` marks an HTML-like label (written <...> in DOT); any other
// value is an ordinary string and Graphviz escapes it.
struct Attr {
  std::string name;
  std::string value;
  bool html = false;
};
using Attrs = std::vector<Attr>;

struct Node {
  std::string id;
  Attrs attrs;
};

struct Edge {
  std::string tail;
  std::string head;
  Attrs attrs;
};

// A subgraph; `cluster` ones get a "cluster_" id prefix and a box around them.
struct Subgraph {
  std::string id;
  bool cluster = true;
  Attrs attrs;
  std::vector<std::string> nodes; // ids of nodes (declared in Drawing::nodes)
  std::vector<Subgraph> children;
};

struct Drawing {
  std::string name;
  std::string layout = "dot"; // Graphviz layout engine; "nop": every node has pos
  Attrs graphAttrs;
  Attrs nodeDefaults;
  Attrs edgeDefaults;
  std::vector<Node> nodes; // in creation order
  std::vector<Edge> edges; // in creation order
  std::vector<Subgraph> subgraphs;
  // Nodes that stand for content (not legend, axes or titles); --max-nodes counts these.
  std::size_t contentNodes = 0;

  Node& addNode(std::string id, Attrs attrs = {});
  Edge& addEdge(std::string tail, std::string head, Attrs attrs = {});
};

// ---------------------------------------------------------------- text helpers

// Escapes text for an HTML-like label: & < > " and ' become entities; characters
// outside printable ASCII pass through as UTF-8.
std::string htmlEscape(std::string_view text);
// Escapes an ordinary attribute value: Graphviz reads backslash sequences (\N, \n,
// \l) in labels and tooltips, so a backslash is doubled.
std::string escapeString(std::string_view text);

// Labels for sizes, FLOPs, times and numbers ("196 KiB", "51.4 MFLOP",
// "456 µs"): core/cost/units.hpp keeps every unit formatter.
using cost::formatBytes;
using cost::formatFlops;
using cost::formatNumber;
using cost::formatSeconds;

// A fixed qualitative palette (light fills that keep black text readable, as
// ColorBrewer's Set3 and Pastel1); colour i of the sequence, cycling.
const std::string& paletteColor(std::size_t index);
// The same hues, saturated, for strokes and markers.
const std::string& strongColor(std::size_t index);
std::size_t paletteSize();

// Fonts every view uses; families listed for SVG viewers and for fontconfig.
inline constexpr const char* kFont = "Helvetica,Arial,sans-serif";
inline constexpr const char* kMonoFont = "DejaVu Sans Mono,Menlo,Consolas,monospace";

} // namespace tapestry::render
