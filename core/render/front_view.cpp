// The front view: a scatter plot of a front/v1 file, predicted time against
// peak memory per device. Every front plan is a dot coloured by the bytes it
// moves (the third objective); the plans that are also non-dominated in time
// and memory alone are joined by a dashed staircase; the baselines are marked
// and named; the selected plan is ringed. Axes are logarithmic where a range
// spans more than a factor of 20.
//
// Drawn with Graphviz like the other views, with the "nop" layout: every node
// has a position computed here (in points), so the same drawing gives svg,
// png, pdf and DOT. Labels are placed greedily beside their marker, trying four
// sides and skipping a front plan's "#i" label when no side is free, so no text
// overlaps.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/cost/front_file.hpp"
#include "core/render/render.hpp"
#include "core/render/view_util.hpp"

namespace tapestry::render {

namespace {

using namespace detail;

// ---------------------------------------------------------------- the file

// A front/v1 file read through its codec (core/cost/front_file.hpp), as the
// drawing uses it: objectives as numbers, the splits as a tooltip's lines, the
// search as one line of facts.
struct Objectives {
  double time = 0;
  double memory = 0;
  double bytes = 0;
};

struct FrontPlan {
  Objectives objectives;
  std::string summary; // per-operation splits, for the tooltip
};

struct Baseline {
  std::string name;
  std::optional<Objectives> objectives; // nullopt: not a valid plan on this target
};

// The document as read (graph, target, devices, selected, select), with the
// plans and baselines as drawn.
struct FrontFile {
  cost::FrontDocument doc;
  std::vector<FrontPlan> plans;    // parallel to doc.plans
  std::vector<Baseline> baselines; // parallel to doc.baselines
  std::string search;              // "1923 evaluations, 30 iterations, seed 1"
};

Objectives drawn(const cost::Objectives& o) {
  return Objectives{o.timeS, static_cast<double>(o.peakMemoryBytes),
                    static_cast<double>(o.transferBytes)};
}

std::string choiceSummary(const std::vector<cost::FrontOperation>& operations) {
  std::string text;
  for (const cost::FrontOperation& op : operations) {
    std::string line = op.name;
    if (!op.split.is_null()) {
      line += " split " + op.split.dump();
    }
    if (!op.devices.is_null()) {
      line += " on " + op.devices.dump();
    }
    text += "\n" + line;
  }
  return text;
}

std::string searchFacts(const Json& search) {
  std::vector<std::string> parts;
  if (search.contains("method") && search["method"] == "exhaustive") {
    parts.push_back("exhaustive");
  }
  auto count = [&](const char* key) -> std::optional<std::int64_t> {
    return search.contains(key) && search[key].is_number_integer()
               ? std::optional(search[key].get<std::int64_t>())
               : std::nullopt;
  };
  if (auto n = count("evaluations")) {
    parts.push_back(std::to_string(*n) + " evaluations");
  }
  if (auto n = count("iterations")) {
    parts.push_back(std::to_string(*n) + " iterations");
  }
  if (auto n = count("seed")) {
    parts.push_back("seed " + std::to_string(*n));
  }
  std::string text;
  for (const std::string& part : parts) {
    text += (text.empty() ? "" : " \xC2\xB7 ") + part;
  }
  return text;
}

FrontFile decodeFront(const json::Value& root) {
  FrontFile f{cost::decodeFront(root), {}, {}, {}};
  const cost::FrontDocument& doc = f.doc;
  for (const cost::FrontPlan& p : doc.plans) {
    std::string summary = choiceSummary(p.operations);
    if (p.relay) {
      summary += *p.relay ? "\ninputs forwarded between devices" : "\ninputs sent to each device";
    }
    f.plans.push_back(FrontPlan{drawn(p.objectives), std::move(summary)});
  }
  for (const cost::FrontBaseline& b : doc.baselines) {
    f.baselines.push_back(
        Baseline{b.name, b.objectives ? std::optional(drawn(*b.objectives)) : std::nullopt});
  }
  f.search = searchFacts(doc.search);
  return f;
}

// ---------------------------------------------------------------- axes

struct Axis {
  double lo = 0;
  double hi = 1;
  bool log = false;
  double length = 1; // points

  double fraction(double v) const {
    if (log) {
      return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    }
    return (v - lo) / (hi - lo);
  }
  double at(double v) const { return fraction(v) * length; }
};

// Range of the values with a margin, log when they span more than 20x.
Axis makeAxis(const std::vector<double>& values, double length) {
  Axis a;
  a.length = length;
  double lo = *std::min_element(values.begin(), values.end());
  double hi = *std::max_element(values.begin(), values.end());
  a.log = lo > 0 && hi / lo > 20;
  if (a.log) {
    double l = std::log10(lo);
    double h = std::log10(hi);
    double pad = (h - l) * 0.06;
    a.lo = std::pow(10, l - pad);
    a.hi = std::pow(10, h + pad);
    return a;
  }
  if (hi == lo) {
    double d = hi == 0 ? 1 : std::fabs(hi) * 0.1;
    lo -= d;
    hi += d;
  }
  double pad = (hi - lo) * 0.08;
  // Not from zero: the spread between plans is what the plot is for.
  a.lo = lo >= 0 ? std::max(0.0, lo - pad) : lo - pad;
  a.hi = hi + pad;
  return a;
}

// Tick values: 1-2-5 steps (linear), decades with 2 and 5 in between when few
// (log). `base` 1024 makes byte ticks land on whole KiB/MiB/GiB.
std::vector<double> ticks(const Axis& a, bool bytes) {
  std::vector<double> out;
  if (a.log) {
    if (bytes) {
      // Powers of two, every `stride` doublings so that there are at most 8.
      int e0 = static_cast<int>(std::ceil(std::log2(a.lo)));
      int e1 = static_cast<int>(std::floor(std::log2(a.hi)));
      int stride = std::max(1, (e1 - e0 + 1 + 7) / 8);
      for (int e = e0; e <= e1; ++e) {
        if (e % stride == 0) {
          out.push_back(std::ldexp(1.0, e));
        }
      }
      return out;
    }
    int d0 = static_cast<int>(std::floor(std::log10(a.lo)));
    int d1 = static_cast<int>(std::ceil(std::log10(a.hi)));
    std::vector<double> decades;
    for (int d = d0; d <= d1; ++d) {
      double v = std::pow(10, d);
      if (v >= a.lo && v <= a.hi) {
        decades.push_back(v);
      }
    }
    if (decades.size() >= 3) {
      return decades;
    }
    for (int d = d0; d <= d1; ++d) {
      for (double m : {1.0, 2.0, 5.0}) {
        double v = m * std::pow(10, d);
        if (v >= a.lo && v <= a.hi) {
          out.push_back(v);
        }
      }
    }
    return out;
  }
  double span = a.hi - a.lo;
  // Bytes step in whole units of the largest binary prefix the span holds 1.5 of.
  double unit = 1;
  if (bytes) {
    while (span / (unit * 1024) >= 1.5) {
      unit *= 1024;
    }
  }
  double raw = span / unit / 5;
  double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  step *= unit;
  for (double v = std::ceil(a.lo / step) * step; v <= a.hi + step * 1e-9; v += step) {
    out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

// ---------------------------------------------------------------- placing text

struct Box {
  double x0, y0, x1, y1;
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

class Plot : public PinnedCanvas {
public:
  explicit Plot(Drawing& d) : PinnedCanvas(d, 1) {}

  // A text node centred at (x, y); its box is reserved.
  void text(const std::string& id, double x, double y, const std::string& label, double size,
            Attrs extra = {}) {
    textNode(id, x, y, label, size, std::move(extra));
    double w = textWidth(label, size);
    reserved_.push_back(Box{x - w / 2, y - size * 0.6, x + w / 2, y + size * 0.6});
  }
  void reserve(const Box& box) { reserved_.push_back(box); }

  // Places `label` beside a marker of radius r at (x, y): right, left, above,
  // below, then the diagonals, then the same farther out with a leader line.
  // When every place overlaps something: nothing if `optional`, else the place
  // with the fewest overlaps.
  bool labelBeside(const std::string& id, double x, double y, double r, const std::string& label,
                   double size, bool optional, Attrs extra = {}) {
    double w = textWidth(label, size);
    double h = size * 1.2;
    struct Candidate {
      Box box;
      bool far;
    };
    std::vector<Candidate> candidates;
    for (int ring = 0; ring < (optional ? 1 : 4); ++ring) {
      double dx = r + 2 + w / 2 + ring * 14;
      double dy = r + 1 + h / 2 + ring * h;
      const std::array<std::pair<double, double>, 8> offsets = {
          std::pair{dx, 0.0}, {-dx, 0.0}, {0.0, dy}, {0.0, -dy},
          {dx, dy},           {-dx, dy},  {dx, -dy}, {-dx, -dy}};
      for (const auto& [ox, oy] : offsets) {
        double cx = x + ox;
        double cy = y + oy;
        Box box{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
        if (box.x0 >= bounds_.x0 && box.x1 <= bounds_.x1 && box.y0 >= bounds_.y0 &&
            box.y1 <= bounds_.y1) {
          candidates.push_back(Candidate{box, ring > 0});
        }
      }
    }
    const Candidate* best = nullptr;
    std::size_t fewest = std::numeric_limits<std::size_t>::max();
    for (const Candidate& c : candidates) {
      auto overlaps = static_cast<std::size_t>(std::count_if(
          reserved_.begin(), reserved_.end(), [&](const Box& o) { return c.box.overlaps(o); }));
      if (overlaps < fewest) {
        fewest = overlaps;
        best = &c;
      }
      if (overlaps == 0) {
        break;
      }
    }
    if (best == nullptr || (fewest > 0 && optional)) {
      if (optional) {
        return false;
      }
      Box box{x + r + 2, y - h / 2, x + r + 2 + w, y + h / 2};
      text(id, (box.x0 + box.x1) / 2, y, label, size, std::move(extra));
      return true;
    }
    Box box = best->box;
    text(id, (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2, label, size, std::move(extra));
    if (best->far) {
      double lx = std::clamp(x, box.x0, box.x1);
      double ly = std::clamp(y, box.y0, box.y1);
      line(x, y, lx, ly, {{"color", "#999999"}, {"penwidth", "0.6"}});
    }
    return true;
  }
  void setBounds(const Box& b) { bounds_ = b; }

private:
  std::vector<Box> reserved_;
  Box bounds_{-1e9, -1e9, 1e9, 1e9};
};

// YlGnBu, light to dark: more bytes moved, darker.
const std::array<const char*, 5> kBytesColors = {"#ffffcc", "#a1dab4", "#41b6c4", "#2c7fb8",
                                                 "#253494"};
const char* kSelected = "#d62728";

std::string objectivesText(const Objectives& o) {
  return formatSeconds(o.time) + ", peak " + formatBytes(o.memory) + ", moved " +
         formatBytes(o.bytes);
}

// The plot area in points, with the time axis along x and memory along y.
constexpr double kPlotWidth = 560;
constexpr double kPlotHeight = 380;
constexpr double kMarkerRadius = 4.5;

struct Axes {
  Axis x; // predicted time
  Axis y; // peak memory per device
};

struct Mark {
  const char* shape;
  const char* glyph;
};
const std::array<Mark, 4> kBaselineMarks = {
    Mark{"diamond", "\xE2\x97\x86"}, Mark{"square", "\xE2\x96\xA0"},
    Mark{"triangle", "\xE2\x96\xB2"}, Mark{"invtriangle", "\xE2\x96\xBC"}};
const Mark& baselineMark(std::size_t i) {
  return kBaselineMarks[i % kBaselineMarks.size()];
}

// Colour bins of the third objective (bytes moved), on a log scale when it
// spans widely.
struct BytesBins {
  double lo = std::numeric_limits<double>::infinity();
  double hi = 0;
  bool log = false;

  explicit BytesBins(const FrontFile& f) {
    for (const FrontPlan& p : f.plans) {
      lo = std::min(lo, p.objectives.bytes);
      hi = std::max(hi, p.objectives.bytes);
    }
    log = lo > 0 && hi / lo > 20;
  }
  bool spread() const { return hi > lo; }
  std::size_t bin(double bytes) const {
    if (!spread()) {
      return 2;
    }
    double fr = log ? (std::log(bytes) - std::log(lo)) / (std::log(hi) - std::log(lo))
                    : (bytes - lo) / (hi - lo);
    return std::min<std::size_t>(4, static_cast<std::size_t>(fr * 5));
  }
  double edge(double fr) const {
    return log ? std::exp(std::log(lo) + fr * (std::log(hi) - std::log(lo))) : lo + fr * (hi - lo);
  }
};

// The title, graph attributes and node and edge defaults.
void setUpDrawing(Drawing& d, const FrontFile& f) {
  d.name = f.doc.graph.empty() ? "front" : f.doc.graph;
  d.layout = "nop";
  std::string where = f.doc.target.empty() ? "" : " on " + f.doc.target;
  if (f.doc.devices) {
    where += " (" + std::to_string(*f.doc.devices) + " devices)";
  }
  std::string facts = std::to_string(f.plans.size()) + " plans on the front";
  if (!f.search.empty()) {
    facts += " \xC2\xB7 " + f.search;
  }
  setPinnedDefaults(d, title(d.name + " Pareto front" + where, facts), "10");
}

// Axes that fit every plan and baseline.
Axes axesFor(const FrontFile& f) {
  std::vector<double> times;
  std::vector<double> memories;
  for (const FrontPlan& p : f.plans) {
    times.push_back(p.objectives.time);
    memories.push_back(p.objectives.memory);
  }
  for (const Baseline& b : f.baselines) {
    if (b.objectives) {
      times.push_back(b.objectives->time);
      memories.push_back(b.objectives->memory);
    }
  }
  if (times.empty()) {
    times = {0, 1};
    memories = {0, 1};
  }
  return Axes{makeAxis(times, kPlotWidth), makeAxis(memories, kPlotHeight)};
}

// Frame, grid, ticks and axis titles (edges are drawn first, under the markers).
void drawFrame(Plot& plot, const Axes& axes) {
  const double width = kPlotWidth;
  const double height = kPlotHeight;
  for (double t : ticks(axes.x, false)) {
    double x = axes.x.at(t);
    plot.line(x, 0, x, height, {{"color", "#e3e3e3"}});
    plot.text("xt" + std::to_string(static_cast<int>(x)), x, -12, formatSeconds(t), 9);
  }
  for (double m : ticks(axes.y, true)) {
    double y = axes.y.at(m);
    plot.line(0, y, width, y, {{"color", "#e3e3e3"}});
    std::string label = formatBytes(m);
    plot.text("yt" + std::to_string(static_cast<int>(y)), -6 - textWidth(label, 9) / 2, y, label,
              9);
  }
  plot.line(0, 0, width, 0, {{"color", "#333333"}});
  plot.line(0, 0, 0, height, {{"color", "#333333"}});
  plot.line(width, 0, width, height, {{"color", "#bbbbbb"}});
  plot.line(0, height, width, height, {{"color", "#bbbbbb"}});
  plot.text("xtitle", width / 2, -32,
            std::string("predicted time") + (axes.x.log ? " (log scale)" : ""), 11);
  std::string yTitle = std::string("peak memory per device") + (axes.y.log ? " (log scale)" : "");
  plot.text("ytitle", textWidth(yTitle, 11) / 2 - 40, height + 16, yTitle, 11);
}

// The time-memory staircase of plans not dominated in those two alone.
void drawStaircase(Plot& plot, const FrontFile& f, const Axes& axes) {
  std::vector<std::size_t> byTime(f.plans.size());
  for (std::size_t i = 0; i < byTime.size(); ++i) {
    byTime[i] = i;
  }
  std::stable_sort(byTime.begin(), byTime.end(), [&](std::size_t a, std::size_t b) {
    const Objectives& oa = f.plans[a].objectives;
    const Objectives& ob = f.plans[b].objectives;
    return oa.time != ob.time ? oa.time < ob.time : oa.memory < ob.memory;
  });
  std::vector<std::size_t> stairs;
  for (std::size_t i : byTime) {
    if (stairs.empty() || f.plans[i].objectives.memory < f.plans[stairs.back()].objectives.memory) {
      stairs.push_back(i);
    }
  }
  for (std::size_t k = 0; k + 1 < stairs.size(); ++k) {
    const Objectives& a = f.plans[stairs[k]].objectives;
    const Objectives& b = f.plans[stairs[k + 1]].objectives;
    Attrs style{{"color", "#888888"}, {"style", "dashed"}};
    plot.line(axes.x.at(a.time), axes.y.at(a.memory), axes.x.at(b.time), axes.y.at(a.memory),
              style);
    plot.line(axes.x.at(b.time), axes.y.at(a.memory), axes.x.at(b.time), axes.y.at(b.memory),
              style);
  }
}

// Every marker's box, reserved before any label is placed so labels avoid all.
void reserveMarkers(Plot& plot, const FrontFile& f, const Axes& axes) {
  const double r = kMarkerRadius;
  for (const FrontPlan& p : f.plans) {
    double x = axes.x.at(p.objectives.time);
    double y = axes.y.at(p.objectives.memory);
    plot.reserve(Box{x - r, y - r, x + r, y + r});
  }
  if (f.doc.selected) {
    const Objectives& o = f.plans[*f.doc.selected].objectives;
    double x = axes.x.at(o.time);
    double y = axes.y.at(o.memory);
    plot.reserve(Box{x - 11, y - 11, x + 11, y + 11}); // the ring
  }
  for (const Baseline& b : f.baselines) {
    if (b.objectives) {
      double x = axes.x.at(b.objectives->time);
      double y = axes.y.at(b.objectives->memory);
      plot.reserve(Box{x - 6, y - 6, x + 6, y + 6});
    }
  }
}

// The front plans' dots, the baselines' marks and the selected plan's ring.
void addMarkers(Drawing& d, const FrontFile& f, const Axes& axes, const BytesBins& bins) {
  for (std::size_t i = 0; i < f.plans.size(); ++i) {
    const FrontPlan& p = f.plans[i];
    bool selected = f.doc.selected == i;
    double x = axes.x.at(p.objectives.time);
    double y = axes.y.at(p.objectives.memory);
    std::string tip = "plan #" + std::to_string(i) + (selected ? " (selected)" : "") + ": " +
                      objectivesText(p.objectives) + p.summary;
    d.addNode("plan" + std::to_string(i),
              {{"label", ""},
               {"shape", "circle"},
               {"fixedsize", "true"},
               {"width", "0.125"},
               {"style", "filled"},
               {"fillcolor", kBytesColors[bins.bin(p.objectives.bytes)]},
               {"color", "#333333"},
               {"penwidth", "0.8"},
               {"tooltip", escapeString(tip)},
               {"pos", pinnedPos(1, x, y)}});
    ++d.contentNodes;
  }
  for (std::size_t i = 0; i < f.baselines.size(); ++i) {
    const Baseline& b = f.baselines[i];
    if (!b.objectives) {
      continue;
    }
    double x = axes.x.at(b.objectives->time);
    double y = axes.y.at(b.objectives->memory);
    d.addNode("baseline:" + b.name,
              {{"label", ""},
               {"shape", baselineMark(i).shape},
               {"fixedsize", "true"},
               {"width", "0.16"},
               {"height", "0.16"},
               {"style", "filled"},
               {"fillcolor", "white"},
               {"color", "#222222"},
               {"penwidth", "1.5"},
               {"tooltip", escapeString(b.name + ": " + objectivesText(*b.objectives))},
               {"pos", pinnedPos(1, x, y)}});
    ++d.contentNodes;
  }
  // The selected plan's ring goes on top of everything (a baseline may sit there).
  if (f.doc.selected) {
    const Objectives& o = f.plans[*f.doc.selected].objectives;
    d.addNode("selected",
              {{"label", ""},
               {"shape", "circle"},
               {"fixedsize", "true"},
               {"width", "0.3"},
               {"style", "solid"},
               {"color", kSelected},
               {"penwidth", "2.2"},
               {"tooltip", escapeString("selected plan #" + std::to_string(*f.doc.selected))},
               {"pos", pinnedPos(1, axes.x.at(o.time), axes.y.at(o.memory))}});
  }
}

// Labels: the selected plan and the baselines always, front plans where free.
void addLabels(Plot& plot, const FrontFile& f, const Axes& axes) {
  if (f.doc.selected) {
    const Objectives& o = f.plans[*f.doc.selected].objectives;
    std::string label = "selected #" + std::to_string(*f.doc.selected);
    if (!f.doc.select.empty()) {
      label += " (" + f.doc.select + ")";
    }
    plot.labelBeside("label:selected", axes.x.at(o.time), axes.y.at(o.memory), 11, label, 10, false,
                     {{"fontcolor", kSelected}});
  }
  for (const Baseline& b : f.baselines) {
    if (b.objectives) {
      plot.labelBeside("label:" + b.name, axes.x.at(b.objectives->time),
                       axes.y.at(b.objectives->memory), 6, b.name, 10, false);
    }
  }
  for (std::size_t i = 0; i < f.plans.size(); ++i) {
    if (f.doc.selected == i) {
      continue;
    }
    const Objectives& o = f.plans[i].objectives;
    plot.labelBeside("label:" + std::to_string(i), axes.x.at(o.time), axes.y.at(o.memory),
                     kMarkerRadius, "#" + std::to_string(i), 8, true, {{"fontcolor", "#555555"}});
  }
}

// The legend, right of the plot.
void addLegend(Drawing& d, const FrontFile& f, const BytesBins& bins) {
  std::vector<LegendRow> rows;
  rows.push_back({"BORDER=\"0\"", font("\xE2\x97\x8F", 14, "#2c7fb8"),
                  "front plan #i (hover for its splits)"});
  if (f.doc.selected) {
    rows.push_back(
        {"BORDER=\"0\"", font("\xE2\x97\x8B", 16, kSelected),
         "selected plan" + (f.doc.select.empty() ? "" : " (--select " + f.doc.select + ")")});
  }
  for (std::size_t i = 0; i < f.baselines.size(); ++i) {
    const Baseline& b = f.baselines[i];
    std::string text = "baseline " + b.name;
    text += b.objectives ? "" : ": not a valid plan here";
    rows.push_back({"BORDER=\"0\"", font(baselineMark(i).glyph, 12), text});
  }
  rows.push_back({"BORDER=\"0\"", font("- - -", 10, "#888888"),
                  "best time for its memory\n(time-memory front)"});
  if (bins.spread()) {
    for (std::size_t k = 0; k < kBytesColors.size(); ++k) {
      rows.push_back({"BGCOLOR=\"" + std::string(kBytesColors[k]) + "\"", "",
                      "moves " + formatBytes(bins.edge(static_cast<double>(k) / 5)) +
                          " \xE2\x80\x93 " +
                          formatBytes(bins.edge(static_cast<double>(k + 1) / 5))});
    }
  } else if (!f.plans.empty()) {
    rows.push_back(
        {"BGCOLOR=\"" + std::string(kBytesColors[2]) + "\"", "", "moves " + formatBytes(bins.hi)});
  }
  std::string html = "<TABLE BORDER=\"1\" COLOR=\"#bbbbbb\" CELLBORDER=\"0\" CELLSPACING=\"2\" "
                     "CELLPADDING=\"2\"><TR><TD COLSPAN=\"2\">" +
                     font("legend", 10, "#555555") + "</TD></TR>";
  std::size_t longest = 0;
  std::size_t lines = 1;
  for (const LegendRow& row : rows) {
    lines += 1 + static_cast<std::size_t>(std::count(row.text.begin(), row.text.end(), '\n'));
    html += "<TR><TD " + row.sampleAttrs + " WIDTH=\"18\">" + row.sample +
            "</TD><TD ALIGN=\"LEFT\">" + font(leftLines(row.text), 10) + "</TD></TR>";
    std::size_t start = 0;
    while (start <= row.text.size()) {
      std::size_t nl = row.text.find('\n', start);
      std::size_t end = nl == std::string::npos ? row.text.size() : nl;
      longest = std::max(longest, end - start);
      start = end + 1;
    }
  }
  html += "</TABLE>";
  double legendWidth = static_cast<double>(longest) * 10 * 0.6 + 40;
  d.addNode("legend", {{"shape", "plaintext"},
                       {"margin", "0"},
                       {"label", html, true},
                       {"pos", pinnedPos(1, kPlotWidth + 24 + legendWidth / 2,
                                         kPlotHeight - 8 * static_cast<double>(lines))}});
}

} // namespace

Drawing frontView(const json::Value& root, const ViewOptions& options) {
  (void)options;
  const FrontFile f = decodeFront(root);
  Drawing d;
  setUpDrawing(d, f);
  const Axes axes = axesFor(f);
  Plot plot(d);
  plot.setBounds(Box{0, 0, kPlotWidth, kPlotHeight});
  drawFrame(plot, axes);
  const BytesBins bins(f);
  drawStaircase(plot, f, axes);
  reserveMarkers(plot, f, axes);
  addMarkers(d, f, axes, bins);
  addLabels(plot, f, axes);
  addLegend(d, f, bins);
  return d;
}

} // namespace tapestry::render
