// The timeline view (render --view timeline): a plan's schedule as a Gantt
// chart. One lane per device and per link, a box per shard, transfer and
// reduction at its time, in its operation's colour (as the graph and plan
// views; past 20 operations its kernel's), the critical path outlined in black,
// many device links one row per sender; with a measured run (a trace from
// bench --trace or run --trace) its lanes are drawn under the predicted ones on
// the same time axis.
//
// Drawn with Graphviz's "nop" layout like the front view: every box, tick and
// label is placed here, in points, so the same drawing gives svg, png, pdf and
// DOT (docs/render.md says why).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/render/render.hpp"
#include "core/render/view_util.hpp"

namespace tapestry::render {

namespace {

using namespace detail;

constexpr double kPlotWidth = 960; // points for the time axis
constexpr double kLabelWidth = 96; // lane labels left of it
constexpr double kLane = 18;       // lane height
constexpr double kLanePitch = 22;  // lane to lane
constexpr double kGroupGap = 30;   // between the predicted and the measured lanes
constexpr double kFontSize = 8;
const char* kCritical = "#111111"; // a thick dark outline (red and blue mark transfers)

// Past this many operations the boxes take their kernel's colour, not their
// operation's: an imported ResNet has 50 to 160 operations, and a legend row
// per operation would be longer than the chart (and the palette repeats).
constexpr std::size_t kColourByKernelAbove = 20;

// Past this many link rows, the links between devices share one row per
// sending device ("links 3->*"): on 8 devices a sharded CNN moves a few
// kilobytes over most of its 56 device links, and a near-empty row each would
// bury the busy ones. Links from the host keep their own rows.
constexpr std::size_t kMostLinkRows = 12;

std::string inches(double points) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", std::max(points, 0.72) / 72);
  return buffer;
}

class Canvas : public PinnedCanvas {
public:
  explicit Canvas(Drawing& d) : PinnedCanvas(d, 2) {}
  void text(double x, double y, const std::string& label, double size, Attrs extra = {}) {
    textNode(nextId("t"), x, y, label, size, std::move(extra));
  }
};

// A tick step of 1, 2 or 5 times a power of ten giving about `count` ticks.
double tickStep(double span, int count) {
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) {
      return m * power;
    }
  }
  return 10 * power;
}

// The colour of each operation: its own, or its kernel's (see
// kColourByKernelAbove), with the legend's rows.
struct Colours {
  std::vector<std::size_t> ofOp;
  std::vector<std::pair<std::string, std::size_t>> kernels; // name, operations (by kernel only)
  bool byKernel = false;
  std::size_t of(std::size_t op) const { return op < ofOp.size() ? ofOp[op] : op; }
};

Colours coloursOf(const TimelinePicture& p) {
  Colours c;
  c.byKernel =
      p.operations.size() > kColourByKernelAbove && p.kernels.size() == p.operations.size();
  for (std::size_t op = 0; op < p.operations.size(); ++op) {
    if (!c.byKernel) {
      c.ofOp.push_back(op);
      continue;
    }
    auto it = std::find_if(c.kernels.begin(), c.kernels.end(),
                           [&](const auto& k) { return k.first == p.kernels[op]; });
    if (it == c.kernels.end()) {
      c.kernels.emplace_back(p.kernels[op], 0);
      it = c.kernels.end() - 1;
    }
    ++it->second;
    c.ofOp.push_back(static_cast<std::size_t>(it - c.kernels.begin()));
  }
  return c;
}

// The row each track is drawn in (npos: none). Devices have their own rows;
// a link that carries nothing (its transfers take no time, as reads in place)
// has none; the rest have their own, or share their sender's past
// kMostLinkRows.
struct Rows {
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> ofTrack;
  std::vector<std::string> names;
};

Rows rowsOf(const Timeline& t) {
  std::vector<double> busy(t.tracks.size(), 0);
  for (const Slice& s : t.slices) {
    busy[s.track] += s.seconds();
  }
  auto isLink = [&](std::size_t k) { return t.tracks[k].kind == Track::Kind::Link; };
  std::size_t links = 0;
  for (std::size_t k = 0; k < t.tracks.size(); ++k) {
    links += isLink(k) && busy[k] > 0 ? 1 : 0;
  }
  const bool bySender = links > kMostLinkRows;
  Rows r;
  r.ofTrack.assign(t.tracks.size(), Rows::kNone);
  std::map<int, std::size_t> senderRow;
  for (std::size_t k = 0; k < t.tracks.size(); ++k) {
    const Track& track = t.tracks[k];
    if (isLink(k) && !(busy[k] > 0)) {
      continue;
    }
    if (isLink(k) && bySender && track.from != plan::kHost) {
      auto [it, added] = senderRow.emplace(track.from, r.names.size());
      if (added) {
        r.names.push_back("links " + std::to_string(track.from) + "->*");
      }
      r.ofTrack[k] = it->second;
      continue;
    }
    r.ofTrack[k] = r.names.size();
    r.names.push_back(track.name);
  }
  return r;
}

struct Scale {
  double end = 1; // seconds at the right edge
  double x(double seconds) const { return kLabelWidth + seconds / end * kPlotWidth; }
};

std::string sliceTooltip(const TimelinePicture& p, const Slice& s) {
  std::string text = s.name + ": " + formatSeconds(s.start) + " to " + formatSeconds(s.end) + " (" +
                     formatSeconds(s.seconds()) + ")";
  if (s.op < p.operations.size()) {
    text += ", operation " + p.operations[s.op];
    if (s.op < p.kernels.size()) {
      text += " (" + p.kernels[s.op] + ")";
    }
  }
  return text + (s.critical ? ", on the critical path" : "");
}

void drawSlice(Drawing& d, const TimelinePicture& p, const Colours& colours, const Slice& s,
               const Track& track, const Scale& scale, double y, const std::string& id) {
  const double x0 = scale.x(s.start);
  const double w = std::max(scale.x(s.end) - x0, 0.72);
  const bool fits = textWidth(s.name, kFontSize) <= w;
  std::string border = "#555555";
  if (track.kind == Track::Kind::Link) {
    border = track.from == plan::kHost ? "#1f77b4" : "#b22222";
  }
  Attrs attrs{{"shape", "box"},
              {"fixedsize", "true"},
              {"width", inches(w)},
              {"height", inches(kLane)},
              {"style", s.kind == Slice::Kind::Reduction ? "filled,rounded" : "filled"},
              {"fillcolor", paletteColor(colours.of(s.op))},
              {"color", s.critical ? kCritical : border},
              {"penwidth", s.critical ? "2.4" : "0.6"},
              {"fontsize", formatNumber(kFontSize)},
              {"label", fits ? escapeString(s.name) : ""},
              {"tooltip", escapeString(sliceTooltip(p, s))},
              {"pos", pinnedPos(2, x0 + w / 2, y)}};
  d.addNode(id, std::move(attrs));
  ++d.contentNodes;
}

// One timeline's lanes from `top` down; returns the y below them.
double drawLanes(Drawing& d, Canvas& c, const TimelinePicture& p, const Colours& colours,
                 std::size_t which, const Scale& scale, double top) {
  const Timeline& t = p.timelines[which];
  c.text(kLabelWidth + textWidth(t.label, 10) / 2, top, t.label, 10, {{"fontcolor", "#333333"}});
  const Rows rows = rowsOf(t);
  double y = top - kLanePitch;
  std::vector<double> rowY(rows.names.size());
  for (std::size_t k = 0; k < rows.names.size(); ++k) {
    rowY[k] = y;
    c.text(kLabelWidth - 4 - textWidth(rows.names[k], 9) / 2, y, rows.names[k], 9);
    c.line(kLabelWidth, y - kLanePitch / 2, kLabelWidth + kPlotWidth, y - kLanePitch / 2,
           {{"color", "#eeeeee"}});
    y -= kLanePitch;
  }
  for (std::size_t i = 0; i < t.slices.size(); ++i) {
    const Slice& s = t.slices[i];
    if (rows.ofTrack[s.track] == Rows::kNone) {
      continue;
    }
    drawSlice(d, p, colours, s, t.tracks[s.track], scale, rowY[rows.ofTrack[s.track]],
              "s" + std::to_string(which) + "_" + std::to_string(i));
  }
  return y;
}

void drawAxis(Canvas& c, const Scale& scale, double top, double bottom, const std::string& title) {
  const double step = tickStep(scale.end, 8);
  for (int i = 0;; ++i) {
    const double t = i * step;
    if (t > scale.end * (1 + 1e-9)) {
      break;
    }
    const double x = scale.x(t);
    c.line(x, top, x, bottom, {{"color", i == 0 ? "#333333" : "#dddddd"}});
    c.text(x, bottom - 10, formatSeconds(t), 9);
  }
  c.line(kLabelWidth, bottom, kLabelWidth + kPlotWidth, bottom, {{"color", "#333333"}});
  c.text(kLabelWidth + kPlotWidth / 2, bottom - 26, title, 10);
}

// Timelines share one time axis unless their lengths differ by more than this
// factor (a GPU prediction beside a CPU run): then each has its own, or the
// shorter would be a sliver.
constexpr double kSharedAxisRatio = 4;

void addTimelineLegend(Drawing& d, const TimelinePicture& p, const Colours& colours, double x,
                       double y) {
  std::vector<LegendRow> rows;
  if (colours.byKernel) {
    for (std::size_t k = 0; k < colours.kernels.size(); ++k) {
      const auto& [kernel, count] = colours.kernels[k];
      rows.push_back(
          {"BGCOLOR=\"" + paletteColor(k) + "\"", "",
           kernel + " (" + std::to_string(count) + (count == 1 ? " operation)" : " operations)")});
    }
  }
  for (std::size_t op = 0; !colours.byKernel && op < p.operations.size(); ++op) {
    rows.push_back({"BGCOLOR=\"" + paletteColor(op) + "\"", "",
                    p.operations[op] + (op < p.kernels.size() ? " (" + p.kernels[op] + ")" : "")});
  }
  rows.push_back({"BORDER=\"0\"", font(bold("\xE2\x96\xA1"), 16, kCritical),
                  "thick outline: on the critical path"});
  rows.push_back({"BORDER=\"0\"", font("\xE2\x96\xA1", 14, "#1f77b4"), "transfer from the host"});
  rows.push_back({"BORDER=\"0\"", font("\xE2\x96\xA1", 14, "#b22222"), "transfer between devices"});
  rows.push_back({"BORDER=\"0\"", font("\xE2\x96\xA2", 14, "#555555"),
                  "reduction (first step to last combine)"});
  std::string html = "<TABLE BORDER=\"1\" COLOR=\"#bbbbbb\" CELLBORDER=\"0\" CELLSPACING=\"2\" "
                     "CELLPADDING=\"2\"><TR><TD COLSPAN=\"2\">" +
                     font("legend", 10, "#555555") + "</TD></TR>";
  std::size_t longest = 6;
  for (const LegendRow& row : rows) {
    html += "<TR><TD " + row.sampleAttrs + " WIDTH=\"18\">" + row.sample +
            "</TD><TD ALIGN=\"LEFT\">" + font(leftLines(row.text), 10) + "</TD></TR>";
    longest = std::max(longest, row.text.size());
  }
  html += "</TABLE>";
  const double width = static_cast<double>(longest) * 10 * 0.6 + 40;
  const double height = static_cast<double>(rows.size() + 1) * 18;
  d.addNode("legend", {{"shape", "plaintext"},
                       {"margin", "0"},
                       {"label", html, true},
                       {"pos", pinnedPos(2, x + width / 2, y - height / 2)}});
}

std::string facts(const TimelinePicture& p) {
  std::string text;
  for (const Timeline& t : p.timelines) {
    std::size_t critical = 0;
    for (const Slice& s : t.slices) {
      critical += s.critical ? 1 : 0;
    }
    text += (text.empty() ? "" : " \xC2\xB7 ") + t.label + ": " + formatSeconds(t.end) + ", " +
            std::to_string(critical) + " tasks on the critical path";
  }
  return text;
}

} // namespace

TimelinePicture timelinePicture(const plan::LoadedPlan& loaded, std::vector<Timeline> timelines) {
  TimelinePicture p;
  p.name = loaded.graph.name;
  p.target = loaded.target.name;
  for (const graph::Operation& op : loaded.graph.operations) {
    p.operations.push_back(op.name);
    p.kernels.push_back(op.kernel);
  }
  p.timelines = std::move(timelines);
  return p;
}

Drawing timelineView(const TimelinePicture& p, const ViewOptions& options) {
  (void)options;
  Drawing d;
  d.name = p.name;
  d.layout = "nop";
  setPinnedDefaults(d, title(p.name + " timeline on " + p.target, facts(p)), "9");
  double end = 0;
  double shortest = 0;
  for (std::size_t i = 0; i < p.timelines.size(); ++i) {
    end = std::max(end, p.timelines[i].end);
    shortest = i == 0 ? p.timelines[i].end : std::min(shortest, p.timelines[i].end);
  }
  const bool shared = !(shortest > 0) || end <= kSharedAxisRatio * shortest;
  const Scale common{end > 0 ? end : 1e-6};
  Canvas c(d);
  const Colours colours = coloursOf(p);
  const double top = 0;
  double y = top;
  for (std::size_t i = 0; i < p.timelines.size(); ++i) {
    const double groupTop = y;
    const Scale scale = shared ? common : Scale{p.timelines[i].end};
    y = drawLanes(d, c, p, colours, i, scale, y);
    if (!shared) {
      drawAxis(c, scale, groupTop - kLanePitch / 2, y + kLanePitch / 2,
               "time from the start of the run (" +
                   p.timelines[i].label.substr(0, p.timelines[i].label.find(' ')) +
                   ": its own scale)");
      y -= 40;
    }
    y -= i + 1 < p.timelines.size() ? kGroupGap : 0;
  }
  if (shared) {
    drawAxis(c, common, top - kLanePitch / 2, y + kLanePitch / 2, "time from the start of the run");
  }
  addTimelineLegend(d, p, colours, kLabelWidth + kPlotWidth + 24, top);
  return d;
}

} // namespace tapestry::render
