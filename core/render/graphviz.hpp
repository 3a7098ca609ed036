// The one place that talks to Graphviz's C libraries: a Drawing becomes a cgraph
// graph; gvc lays it out and renders it into memory (svg, png, pdf), or cgraph
// writes it back as DOT text without a layout (stable: no font metrics, no
// coordinates but those a view pinned itself). Graphviz is not thread-safe; the
// process-wide gvc context is created on first use and callers render from one
// thread at a time.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/render/drawing.hpp"

namespace tapestry::render {

enum class ImageFormat { Dot, Svg, Png, Pdf };

const char* formatName(ImageFormat format); // "dot", "svg", "png", "pdf"
// The format an output path asks for by its extension (case-insensitive):
// .dot/.gv, .svg, .png, .pdf; nullopt for anything else.
std::optional<ImageFormat> formatFromPath(std::string_view path);

// The drawing as DOT text, before layout (what `-o x.dot` and stdout get).
std::string writeDot(const Drawing& drawing);

// The drawing with the labels of edges between two clusters (or a cluster and
// the outside) turned into external labels (xlabel), which dot places after the
// layout instead of ranking a node for them: a retry for layouts that crash.
Drawing withOuterLabels(const Drawing& drawing);

struct Rendered {
  std::string bytes;
  // Set when Graphviz failed on the drawing as made and a retry drew it: what
  // went wrong and what the retry changed, for a note on stderr.
  std::optional<std::string> note;
};

// Lays the drawing out with its engine and renders it (ImageFormat::Dot is
// writeDot). Layout runs in a forked child process, so that a Graphviz crash
// (2.4x aborts on some cluster layouts) cannot take tapestry down; a failed
// layout is retried with outer labels, global ranking, then straight edges.
// When that fails too: InternalError. A layout still running after
// `layoutSeconds` is killed: Error (exit 1) saying so, with no retry (dot's
// crossing minimization on a plan hundreds of ranks deep can run for hours).
Rendered renderImage(const Drawing& drawing, ImageFormat format, double layoutSeconds = 120);

// What renderImage throws when the layout ran past its deadline (what ran
// out, no advice); the caller names the file and says what to draw instead
// (Error, exit 1).
class LayoutTimeout : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace tapestry::render
