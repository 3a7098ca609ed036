#include "core/driver/render_command.hpp"

#include <ostream>
#include <vector>

#include "core/cost/units.hpp"
#include "core/diag/atomic_file.hpp"
#include "core/diag/source.hpp"
#include "core/driver/execution.hpp"
#include "core/driver/output_summary.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::driver {

using namespace tapestry::render;

namespace {

enum class FileKind { Graph, Plan, Front, Trace };

// The kind of document by its "tapestry" tag (located error for anything else).
FileKind sniff(const json::Value& root, std::string& tag) {
  root.expectObject();
  if (!root.has("tapestry") && root.has("traceEvents")) {
    tag = "trace";
    return FileKind::Trace; // a Chrome trace; timelinePictureFromTrace checks it is ours
  }
  json::Value tagValue = root.member("tapestry");
  tag = tagValue.asString();
  if (tag == "graph/v1" || tag == "expanded/v1") {
    return FileKind::Graph;
  }
  if (tag == "plan/v1") {
    return FileKind::Plan;
  }
  if (tag == "front/v1") {
    return FileKind::Front;
  }
  tagValue.fail("unknown format " + json::brief(tagValue.json()) +
                " (expected \"graph/v1\", \"expanded/v1\", \"plan/v1\" or \"front/v1\")");
}

View defaultView(FileKind kind) {
  switch (kind) {
  case FileKind::Graph:
    return View::Graph;
  case FileKind::Plan:
    return View::Plan;
  case FileKind::Front:
    return View::Front;
  case FileKind::Trace:
    return View::Timeline;
  }
  return View::Graph;
}

bool canShow(FileKind kind, View view) {
  switch (kind) {
  case FileKind::Graph:
    return view == View::Graph || view == View::Timeline;
  case FileKind::Plan:
    return view == View::Plan || view == View::Graph || view == View::Timeline ||
           view == View::Original;
  case FileKind::Front:
    return view == View::Front;
  case FileKind::Trace:
    return view == View::Timeline;
  }
  return false;
}

// The drawing of `root` in `view`; `subject` says what it shows, `warnings`
// are the plan loader's (plan::LoadedPlan::warnings).
Drawing draw(FileKind kind, View view, const json::Value& root, const RenderConfig& config,
             std::string& subject, std::vector<Diagnostic>& warnings) {
  if (kind == FileKind::Front) {
    subject = "front";
    return frontView(root, config.options);
  }
  if (kind == FileKind::Trace) {
    subject = "timeline";
    return timelineView(timelinePictureFromTrace(root), config.options);
  }
  const metakernel::MetakernelLibrary library =
      metakernel::MetakernelLibrary::load(config.kernelPaths);
  if (view == View::Timeline) {
    // A graph: its single-device plan on this machine, as run and trace take it.
    const plan::LoadedPlan loaded = runnableFrom(root, library, config.inputPath);
    warnings = loaded.warnings;
    std::vector<Timeline> predicted;
    predicted.push_back(
        buildTimeline(loaded, intervalsOf(loaded.simulation), predictedLabel(loaded)));
    subject = "timeline";
    return timelineView(timelinePicture(loaded, std::move(predicted)), config.options);
  }
  subject = view == View::Graph ? "graph" : view == View::Original ? "original graph" : "plan";
  if (kind == FileKind::Graph) {
    graph::ExpandedGraph g = graph::expand(graph::decodeGraph(root), library);
    g.file = displayName(config.inputPath);
    return graphView(g, config.options);
  }
  const plan::LoadedPlan loaded = plan::decodePlan(root, library);
  warnings = loaded.warnings;
  if (view == View::Graph) {
    return graphView(loaded.graph, config.options);
  }
  if (view == View::Original) {
    if (!loaded.origin) {
      throw UsageError("--view original: " + displayName(config.inputPath) +
                       " records no original graph (no rewrite rule changed its graph; "
                       "--view graph draws it)");
    }
    return graphView(loaded.origin->graph, config.options);
  }
  if (needsOverview(loaded)) {
    subject = "plan overview"; // too deep to draw shard by shard
    return planOverview(loaded, config.options);
  }
  return planView(loaded, config.options);
}

} // namespace

std::string layoutAdvice(View view, bool collapseUntried) {
  std::string advice = ": give it longer";
  if (view == View::Timeline) {
    advice = ": a plan of fewer shards has fewer tasks to draw; or give it longer";
  } else if (view == View::Plan) {
    advice += ", or draw the plan's graph (--view graph) or schedule (--view timeline)";
  }
  if (collapseUntried) {
    advice += ", or draw less (--collapse)";
  }
  return advice;
}

LaidOut layOutOrCollapse(const Drawing& full, const std::function<Drawing()>& collapsed,
                         double seconds, const LayoutFn& layout) {
  LaidOut out;
  if (!collapsed || full.contentNodes < kCollapseFallbackNodes) {
    out.rendered = layout(full, seconds);
    out.drawing = full;
    return out;
  }
  const double first = seconds / 4;
  try {
    out.rendered = layout(full, first);
    out.drawing = full;
    return out;
  } catch (const LayoutTimeout&) {
  }
  out.drawing = collapsed();
  out.collapsedInstead = true;
  const Drawing& shown = out.drawing;
  try {
    out.rendered = layout(shown, seconds - first);
  } catch (const LayoutTimeout&) {
    throw LayoutTimeout(
        "Graphviz did not lay out the drawing (" + std::to_string(full.contentNodes) +
        " nodes) within " + cost::formatNumber(first) + " s, nor its collapsed drawing (" +
        std::to_string(shown.contentNodes) + " nodes) in the " +
        cost::formatNumber(seconds - first) + " s left, and was stopped (--layout-seconds)");
  }
  std::string note = "the drawing of " + std::to_string(full.contentNodes) +
                     " nodes did not lay out within " + cost::formatNumber(first) +
                     " s (a quarter of --layout-seconds); drew it collapsed (" +
                     std::to_string(shown.contentNodes) +
                     " nodes) instead: --collapse asks for that at once, a longer "
                     "--layout-seconds gives the full drawing more time";
  std::optional<std::string>& noted = out.rendered.note;
  noted = noted ? note + "; " + *noted : note;
  return out;
}

int renderCommand(const RenderConfig& config, std::ostream& out, std::ostream& err) {
  // Flags first: a bad extension is reported before the input is read.
  ImageFormat format = ImageFormat::Dot;
  if (config.outputPath != "-") {
    std::optional<ImageFormat> byExtension = formatFromPath(config.outputPath);
    if (!byExtension) {
      throw UsageError("cannot tell the picture format of \"" + config.outputPath +
                       "\" from its extension (expected .svg, .png, .pdf or .dot)");
    }
    format = *byExtension;
  }

  json::Document document =
      json::Document::parse(SourceFile::read(config.inputPath, "a graph, plan or front file"));
  json::Value root(document);
  std::string tag;
  FileKind kind = sniff(root, tag);
  View view = config.view.value_or(defaultView(kind));
  if (!canShow(kind, view)) {
    throw UsageError("--view " + std::string(viewName(view)) + " cannot draw " +
                     displayName(config.inputPath) + ": it is a " + tag + " file (" +
                     (kind == FileKind::Front   ? "use --view front"
                      : kind == FileKind::Plan  ? "use --view plan, graph, original or timeline"
                      : kind == FileKind::Trace ? "use --view timeline"
                                                : "use --view graph or timeline") +
                     ")");
  }

  std::string subject;
  std::vector<Diagnostic> warnings;
  const Drawing full = draw(kind, view, root, config, subject, warnings);
  printWarnings(warnings, err);
  checkNodeLimit(full, config.options, subject, displayName(config.inputPath));

  // The graph and plan views can collapse: a large one that was not asked to
  // is drawn collapsed where its full layout takes too long.
  std::function<Drawing()> collapsed;
  if (!config.options.collapse && (kind == FileKind::Graph || kind == FileKind::Plan) &&
      view != View::Timeline && format != ImageFormat::Dot) {
    collapsed = [&] {
      RenderConfig again = config;
      again.options.collapse = true;
      std::vector<Diagnostic> againWarnings; // the same as the full drawing's
      return draw(kind, view, root, again, subject, againWarnings);
    };
  }
  LaidOut laid;
  try {
    laid = layOutOrCollapse(
        full, collapsed, config.layoutSeconds,
        [format](const Drawing& d, double s) { return renderImage(d, format, s); });
  } catch (const LayoutTimeout& e) {
    throw Error(SourceLocation{displayName(config.inputPath), 0, 0, {}},
                e.what() +
                    layoutAdvice(view, collapsed && full.contentNodes < kCollapseFallbackNodes));
  }
  const Drawing& drawing = laid.drawing;
  const Rendered& rendered = laid.rendered;
  const std::string& bytes = rendered.bytes;
  writeFileAtomically(config.outputPath, bytes, out);
  if (rendered.note && !config.quiet) {
    err << displayName(config.inputPath) << ": note: " << *rendered.note << "\n";
  }

  const std::string shown =
      subject == "plan overview" ? subject : viewName(view) + std::string(" view");
  std::string summary = "rendered " + drawing.name + " (" + shown + ", " +
                        std::to_string(drawing.contentNodes) + " nodes) -> " +
                        outputName(config.outputPath) + " (" + formatName(format) + ")\n";
  Json doc = Json::object();
  doc["status"] = "ok";
  doc["view"] = viewName(view);
  doc["name"] = drawing.name;
  doc["nodes"] = drawing.contentNodes;
  // Asked for (--collapse), or drawn so when the full layout took too long.
  doc["collapsed"] = config.options.collapse || laid.collapsedInstead;
  doc["format"] = formatName(format);
  doc["output"] = config.outputPath;
  doc["bytes"] = bytes.size();
  addWarnings(doc, warnings);
  reportOutput(config, doc, summary, out, err);
  return 0;
}

} // namespace tapestry::driver
