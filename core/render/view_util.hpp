// Helpers the three views share (internal to core/render): HTML-like label
// pieces, the common graph/node/edge defaults, and the legend node.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/render/drawing.hpp"

namespace tapestry::render::detail {

inline std::string font(const std::string& html, int pointSize, const std::string& color = {}) {
  std::string open = "<FONT POINT-SIZE=\"" + std::to_string(pointSize) + "\"";
  if (!color.empty()) {
    open += " COLOR=\"" + color + "\"";
  }
  return open + ">" + html + "</FONT>";
}

inline std::string mono(const std::string& html, int pointSize = 9) {
  return "<FONT FACE=\"" + std::string(kMonoFont) + "\" POINT-SIZE=\"" + std::to_string(pointSize) +
         "\">" + html + "</FONT>";
}

inline std::string bold(const std::string& html) {
  return "<B>" + html + "</B>";
}

// HTML lines stacked in a borderless table: even spacing, each line centred.
inline std::string stack(const std::vector<std::string>& lines) {
  std::string html = "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">";
  for (const std::string& line : lines) {
    html += "<TR><TD>" + line + "</TD></TR>";
  }
  return html + "</TABLE>";
}

// A title: the name in bold over a smaller line of facts.
inline std::string title(const std::string& name, const std::string& facts) {
  return font(bold(htmlEscape(name)), 16) + "<BR/>" + font(htmlEscape(facts), 11, "#444444");
}

// Defaults shared by the graph and plan views.
inline void setCommonDefaults(Drawing& d, const std::string& rankdir) {
  d.graphAttrs.push_back({"rankdir", rankdir});
  d.graphAttrs.push_back({"fontname", kFont});
  d.graphAttrs.push_back({"labelloc", "t"});
  d.graphAttrs.push_back({"nodesep", "0.35"});
  d.graphAttrs.push_back({"ranksep", "0.4"});
  d.graphAttrs.push_back({"pad", "0.2"});
  d.graphAttrs.push_back({"bgcolor", "white"});
  d.nodeDefaults = {{"fontname", kFont},   {"fontsize", "11"},     {"shape", "box"},
                    {"style", "filled"},   {"fillcolor", "white"}, {"color", "#555555"},
                    {"margin", "0.1,0.05"}};
  d.edgeDefaults = {{"fontname", kMonoFont},
                    {"fontsize", "9"},
                    {"color", "#666666"},
                    {"fontcolor", "#333333"},
                    {"arrowsize", "0.7"}};
}

// One legend row: a sample cell (HTML, with its own cell attributes) and the
// explanation beside it.
struct LegendRow {
  std::string sampleAttrs; // e.g. BGCOLOR="#eeeeee"
  std::string sample;      // HTML
  std::string text;        // plain text, escaped here; '\n' breaks the line
};

// Plain text as HTML lines, left-aligned.
inline std::string leftLines(const std::string& text) {
  std::string html;
  std::size_t start = 0;
  while (true) {
    std::size_t nl = text.find('\n', start);
    html += htmlEscape(text.substr(start, nl - start));
    if (nl == std::string::npos) {
      break;
    }
    html += "<BR ALIGN=\"LEFT\"/>";
    start = nl + 1;
  }
  return html + "<BR ALIGN=\"LEFT\"/>";
}

// A cluster "legend" holding one plaintext node with a table of rows.
inline void addLegend(Drawing& d, const std::vector<LegendRow>& rows) {
  std::string html = "<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"3\" CELLPADDING=\"3\">";
  for (const LegendRow& row : rows) {
    html += "<TR><TD " + row.sampleAttrs + ">" + row.sample +
            "</TD><TD BORDER=\"0\" ALIGN=\"LEFT\">" + font(leftLines(row.text), 10) + "</TD></TR>";
  }
  html += "</TABLE>";
  d.addNode("legend",
            {{"shape", "plaintext"}, {"style", ""}, {"margin", "0"}, {"label", html, true}});
  Subgraph legend;
  legend.id = "legend";
  legend.attrs = {{"label", "legend"},
                  {"fontsize", "10"},
                  {"fontcolor", "#555555"},
                  {"color", "#bbbbbb"},
                  {"style", "rounded"}};
  legend.nodes.push_back("legend");
  d.subgraphs.push_back(std::move(legend));
}

// ---- pinned drawings (the front and timeline views place every node
// themselves and hand the positions to Graphviz's nop layout)

// Text extent estimate for a sans font: wide enough for DejaVu Sans digits.
inline double textWidth(const std::string& text, double size) {
  std::size_t chars = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) {
      ++chars; // count UTF-8 code points
    }
  }
  return static_cast<double>(chars) * size * 0.58 + 4;
}

// A fixed position for the nop layout: "x,y!" with `decimals` digits.
inline std::string pinnedPos(int decimals, double x, double y) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f,%.*f!", decimals, x, decimals, y);
  return buffer;
}

// Invisible points, lines between them and text nodes at fixed positions.
class PinnedCanvas {
public:
  PinnedCanvas(Drawing& d, int decimals) : d_(d), decimals_(decimals) {}

  std::string pos(double x, double y) const { return pinnedPos(decimals_, x, y); }
  std::string point(double x, double y) {
    std::string id = "p" + std::to_string(next_++);
    d_.addNode(id, {{"shape", "point"}, {"width", "0.01"}, {"style", "invis"}, {"pos", pos(x, y)}});
    return id;
  }
  void line(double x0, double y0, double x1, double y1, Attrs attrs) {
    std::string a = point(x0, y0);
    std::string b = point(x1, y1);
    attrs.push_back({"dir", "none"});
    d_.addEdge(a, b, std::move(attrs));
  }
  // A text node `id` centred at (x, y).
  void textNode(const std::string& id, double x, double y, const std::string& label, double size,
                Attrs extra) {
    Attrs attrs{{"shape", "plaintext"},
                {"style", ""},
                {"margin", "0"},
                {"width", "0"},
                {"height", "0"},
                {"fontsize", formatNumber(size)},
                {"label", escapeString(label)},
                {"pos", pos(x, y)}};
    attrs.insert(attrs.end(), extra.begin(), extra.end());
    d_.addNode(id, std::move(attrs));
  }
  // A fresh id for a node the caller adds.
  std::string nextId(const char* prefix) { return prefix + std::to_string(next_++); }

private:
  Drawing& d_;
  int decimals_;
  std::size_t next_ = 0;
};

// Graph defaults of a pinned drawing (nop layout): `label` (HTML) on top,
// straight lines drawn under the nodes.
inline void setPinnedDefaults(Drawing& d, std::string label, const char* nodeFontSize) {
  d.graphAttrs = {{"fontname", kFont}, {"label", std::move(label), true}, {"labelloc", "t"},
                  {"splines", "line"}, {"outputorder", "edgesfirst"},     {"bgcolor", "white"},
                  {"pad", "0.3"}};
  d.nodeDefaults = {{"fontname", kFont}, {"fontsize", nodeFontSize}};
  d.edgeDefaults = {{"arrowhead", "none"}};
}

} // namespace tapestry::render::detail
