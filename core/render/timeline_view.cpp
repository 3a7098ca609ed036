// The timeline view (render --view timeline): a plan's schedule as a Gantt
// chart. One lane per device and per link, a box per shard, transfer and
// reduction at its time, in its operation's colour (as the graph and plan
// views), the critical path outlined in red; with a measured run (a trace from
// bench --trace or run --trace) its lanes are drawn under the predicted ones on
// the same time axis.
//
// Drawn with Graphviz's "nop" layout like the front view: every box, tick and
// label is placed here, in points, so the same drawing gives svg, png, pdf and
// DOT (docs/render.md says why).
#include <algorithm>
#include <cmath>
#include <cstdio>
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

struct Scale {
  double end = 1; // seconds at the right edge
  double x(double seconds) const { return kLabelWidth + seconds / end * kPlotWidth; }
};

std::string sliceTooltip(const TimelinePicture& p, const Slice& s) {
  std::string text = s.name + ": " + formatSeconds(s.start) + " to " + formatSeconds(s.end) + " (" +
                     formatSeconds(s.seconds()) + ")";
  if (s.op < p.operations.size()) {
    text += ", operation " + p.operations[s.op];
  }
  return text + (s.critical ? ", on the critical path" : "");
}

void drawSlice(Drawing& d, const TimelinePicture& p, const Slice& s, const Track& track,
               const Scale& scale, double y, const std::string& id) {
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
              {"fillcolor", paletteColor(s.op)},
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
double drawLanes(Drawing& d, Canvas& c, const TimelinePicture& p, std::size_t which,
                 const Scale& scale, double top) {
  const Timeline& t = p.timelines[which];
  c.text(kLabelWidth + textWidth(t.label, 10) / 2, top, t.label, 10, {{"fontcolor", "#333333"}});
  double y = top - kLanePitch;
  std::vector<double> laneY(t.tracks.size());
  for (std::size_t k = 0; k < t.tracks.size(); ++k) {
    laneY[k] = y;
    c.text(kLabelWidth - 4 - textWidth(t.tracks[k].name, 9) / 2, y, t.tracks[k].name, 9);
    c.line(kLabelWidth, y - kLanePitch / 2, kLabelWidth + kPlotWidth, y - kLanePitch / 2,
           {{"color", "#eeeeee"}});
    y -= kLanePitch;
  }
  for (std::size_t i = 0; i < t.slices.size(); ++i) {
    const Slice& s = t.slices[i];
    drawSlice(d, p, s, t.tracks[s.track], scale, laneY[s.track],
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

void addTimelineLegend(Drawing& d, const TimelinePicture& p, double x, double y) {
  std::vector<LegendRow> rows;
  for (std::size_t op = 0; op < p.operations.size(); ++op) {
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
  const double top = 0;
  double y = top;
  for (std::size_t i = 0; i < p.timelines.size(); ++i) {
    const double groupTop = y;
    const Scale scale = shared ? common : Scale{p.timelines[i].end};
    y = drawLanes(d, c, p, i, scale, y);
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
  addTimelineLegend(d, p, kLabelWidth + kPlotWidth + 24, top);
  return d;
}

} // namespace tapestry::render
