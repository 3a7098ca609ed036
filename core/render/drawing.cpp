#include "core/render/drawing.hpp"

#include <array>
#include <cmath>
#include <cstdio>

namespace tapestry::render {

Node& Drawing::addNode(std::string id, Attrs attrs) {
  nodes.push_back(Node{std::move(id), std::move(attrs)});
  return nodes.back();
}

Edge& Drawing::addEdge(std::string tail, std::string head, Attrs attrs) {
  edges.push_back(Edge{std::move(tail), std::move(head), std::move(attrs)});
  return edges.back();
}

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    case '\n':
      out += ' ';
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string escapeString(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// ColorBrewer Set3 without its grey (grey marks graph inputs), then the
// matching saturated hues for strokes.
const std::array<std::string, 11> kPalette = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                              "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                                              "#bc80bd", "#ccebc5", "#ffed6f"};
const std::array<std::string, 11> kStrong = {"#1b9e77", "#b8a600", "#7570b3", "#e31a1c",
                                             "#1f78b4", "#ff7f00", "#33a02c", "#e7298a",
                                             "#6a3d9a", "#4daf4a", "#b15928"};

} // namespace

const std::string& paletteColor(std::size_t index) {
  return kPalette[index % kPalette.size()];
}

const std::string& strongColor(std::size_t index) {
  return kStrong[index % kStrong.size()];
}

std::size_t paletteSize() {
  return kPalette.size();
}

} // namespace tapestry::render
