// `tapestry render FILE [-o OUT.svg|.png|.pdf|.dot] [--view graph|plan|front]`
// (SPEC §2, §8): the whole command, so cli/cmd_render.cpp only parses flags and
// tests call the same code.
//
// The file's "tapestry" tag picks the default view: graph/v1 and expanded/v1
// draw the graph, plan/v1 the plan (--view graph draws its embedded graph),
// front/v1 the front. The output format follows -o's extension; without -o (or
// with -o -) the drawing goes to `out` as DOT text, before layout, so it is
// byte-for-byte stable and can be piped into Graphviz's own tools.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/render/graphviz.hpp"
#include "core/render/render.hpp"

namespace tapestry::driver {

struct RenderConfig {
  std::string inputPath;                // "-" reads standard input
  std::vector<std::string> kernelPaths; // -k files and directories, for graph files
  std::string outputPath = "-";         // "-": DOT text on `out`
  std::optional<render::View> view;     // nullopt: by the file's tag
  render::ViewOptions options;
  double layoutSeconds = 120; // --layout-seconds: Graphviz's layout is stopped after this
  bool json = false;          // --format json: a summary document on `out` when -o is a file
  bool quiet = false;         // no text summary
  bool verbose = false;       // a summary on `err` even when the drawing goes to `out`
};

// Returns 0. A bad output extension or a view the file cannot give is a
// UsageError (exit 2); bad input and --max-nodes exceeded are Error (exit 1).
// Nothing is written unless the whole picture was made (atomic output file).
int renderCommand(const RenderConfig& config, std::ostream& out, std::ostream& err);

// What render adds to a layout timeout's message: what else to draw in
// `view`, and --collapse where it was not tried (a graph or plan view under
// kCollapseFallbackNodes, not asked to collapse).
std::string layoutAdvice(render::View view, bool collapseUntried);

// A drawing of this many content nodes or more, not asked to collapse, gets a
// quarter of --layout-seconds for its full layout, and is drawn collapsed in
// the rest of the time when that runs out (docs/render.md).
inline constexpr std::size_t kCollapseFallbackNodes = 300;

// How a drawing is laid out and rendered within some seconds (renderImage in
// the chosen format; a test's stand-in), throwing render::LayoutTimeout past them.
using LayoutFn = std::function<render::Rendered(const render::Drawing&, double seconds)>;

// The picture of `full` within `seconds`; where `collapsed` is given (the view
// can collapse and was not asked to) and `full` has kCollapseFallbackNodes
// nodes or more, the full layout gets a quarter of them and, past that, the
// collapsed drawing the rest, with a note saying so. Past the time:
// render::LayoutTimeout.
struct LaidOut {
  render::Rendered rendered;
  render::Drawing drawing; // the drawing laid out
  bool collapsedInstead = false;
};
LaidOut layOutOrCollapse(const render::Drawing& full,
                         const std::function<render::Drawing()>& collapsed, double seconds,
                         const LayoutFn& layout);

} // namespace tapestry::driver
