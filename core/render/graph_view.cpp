// The graph view: tensors and operations of an expanded graph, edges labelled
// with the port and its IPF; with --collapse, weights folded into their
// operation and repeated name blocks merged (see render.hpp).
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/diag/error.hpp"
#include "core/plan/plan.hpp"
#include "core/render/render.hpp"
#include "core/render/view_util.hpp"
#include "core/zspace/zpoint.hpp"

namespace tapestry::render {

const char* viewName(View view) {
  switch (view) {
  case View::Graph:
    return "graph";
  case View::Plan:
    return "plan";
  case View::Front:
    return "front";
  case View::Timeline:
    return "timeline";
  case View::Original:
    return "original";
  }
  return "graph";
}

void checkNodeLimit(const Drawing& drawing, const ViewOptions& options, const std::string& what,
                    const std::string& file) {
  if (drawing.contentNodes > options.maxNodes) {
    SourceLocation location;
    location.file = file;
    throw Error(location, what + " has " + std::to_string(drawing.contentNodes) +
                              " nodes, more than --max-nodes " + std::to_string(options.maxNodes) +
                              (what == "timeline" ? std::string(" (one per task)")
                               : options.collapse ? " (even with --collapse)"
                                                  : " (use --collapse)"));
  }
}

namespace {

// "2·i3", "-i0", "i1" for one term of an affine row.
std::string term(std::int64_t coefficient, std::size_t dim) {
  std::string var = "i" + std::to_string(dim);
  if (coefficient == 1) {
    return var;
  }
  if (coefficient == -1) {
    return "-" + var;
  }
  return std::to_string(coefficient) + "\xC2\xB7" + var; // middle dot
}

} // namespace

std::string compactIpf(const IndexProjection& ipf, const std::vector<std::int64_t>& shape) {
  const ZMatrix& projection = ipf.map().projection();
  const ZPoint& offset = ipf.map().offset();
  const ZPoint& extent = ipf.shape();
  std::string out = "[";
  for (std::size_t d = 0; d < projection.rows(); ++d) {
    if (d > 0) {
      out += ", ";
    }
    std::string expression;
    for (std::size_t k = 0; k < projection.cols(); ++k) {
      std::int64_t c = projection(d, k);
      if (c == 0) {
        continue;
      }
      std::string t = term(c, k);
      if (!expression.empty() && t.front() != '-') {
        expression += "+";
      }
      expression += t;
    }
    std::int64_t b = offset[d];
    std::int64_t n = extent[d];
    if (expression.empty()) {
      // A fixed range of the tensor: the same for every index point.
      bool whole = b == 0 && d < shape.size() && n == shape[d];
      if (whole) {
        out += ":";
      } else if (n == 1) {
        out += std::to_string(b);
      } else {
        out += std::to_string(b) + ":" + std::to_string(b + n);
      }
      continue;
    }
    if (b > 0) {
      expression += "+" + std::to_string(b);
    } else if (b < 0) {
      expression += std::to_string(b);
    }
    out += expression;
    if (n != 1) {
      out += ":+" + std::to_string(n);
    }
  }
  return out + "]";
}

namespace {

using graph::ExpandedGraph;
using graph::Operation;
using graph::Tensor;
using namespace detail;

double tensorBytes(const metakernel::TensorType& type) {
  double bytes = static_cast<double>(plan::dtypeSize(type.dtype));
  for (std::int64_t d : type.shape) {
    bytes *= static_cast<double>(d);
  }
  return bytes;
}

std::string typeText(const metakernel::TensorType& type) {
  return type.dtype + " " + formatInts(type.shape);
}

std::string tensorId(const Tensor& t) {
  return "t:" + t.name;
}

// "X: [i0, :]", or "tensors[1]: [...]" for tensor `j` of a list port.
std::string portLabel(const graph::PortTensors& port, std::size_t j,
                      const metakernel::PortResult& result, const Tensor& tensor) {
  std::string name = port.port;
  if (port.list) {
    name += "[" + std::to_string(j) + "]";
  }
  if (j < result.ipfs.size()) {
    return name + ": " + compactIpf(result.ipfs[j], tensor.type.shape);
  }
  return name;
}

std::string portTooltip(const Operation& op, const graph::PortTensors& port, std::size_t j,
                        const metakernel::PortResult& result) {
  std::string text = op.name + "." + port.port;
  if (port.list) {
    text += "[" + std::to_string(j) + "]";
  }
  if (j < result.ipfs.size()) {
    text += " " + result.ipfs[j].toString();
  }
  return text;
}

// Items joined with ", " into lines of about `width` characters.
std::vector<std::string> wrapItems(const std::vector<std::string>& items, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  for (const std::string& item : items) {
    if (!line.empty() && line.size() + 2 + item.size() > width) {
      lines.push_back(line + ",");
      line.clear();
    }
    line += (line.empty() ? "" : ", ") + item;
  }
  if (!line.empty()) {
    lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> paramLines(const Json& params) {
  std::vector<std::string> items;
  for (const auto& [key, value] : params.items()) {
    items.push_back(key + "=" + value.dump());
  }
  return wrapItems(items, 36);
}

// "zr[0:64, 0:512, 0:784]  sum over i2"
std::string indexLine(const Operation& op) {
  const metakernel::Application& app = op.application;
  std::string text = app.index.toString();
  if (!app.reductionDims.empty()) {
    std::vector<std::string> dims;
    for (std::size_t d : app.reductionDims) {
      dims.push_back("i" + std::to_string(d));
    }
    std::string combine = "reduce";
    for (const metakernel::PortResult& out : app.outputs) {
      if (out.combine) {
        combine = metakernel::combineName(*out.combine);
        break;
      }
    }
    std::string joined;
    for (const std::string& dim : dims) {
      joined += (joined.empty() ? "" : ", ") + dim;
    }
    text += "  " + combine + " over " + joined;
  }
  return text;
}

std::string tensorLabel(const Tensor& t) {
  return bold(htmlEscape(t.name)) + "<BR/>" +
         font(htmlEscape(typeText(t.type)) + " \xC2\xB7 " + formatBytes(tensorBytes(t.type)), 9);
}

// ---------------------------------------------------------------- collapse

bool hasDigit(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// The name block an operation belongs to: its dotted prefix up to the first
// component with a digit ("block3" for "block3.attn.q", "layers.0" for
// "layers.0.mlp.up"), else its first component ("encoder" for "encoder.ln");
// "" for a name without dots.
std::string blockKey(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot - start));
    if (dot == std::string::npos) {
      break;
    }
    start = dot + 1;
  }
  if (parts.size() < 2) {
    return "";
  }
  std::string key;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    key += (i > 0 ? "." : "") + parts[i];
    if (hasDigit(parts[i])) {
      return key;
    }
  }
  return parts[0];
}

// "block#" for "block12": blocks that differ only in their numbers can repeat.
std::string keyPattern(const std::string& key) {
  std::string out;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(key[i])) != 0) {
      if (out.empty() || out.back() != '#') {
        out += '#';
      }
    } else {
      out += key[i];
    }
  }
  return out;
}

// What one visible operation node stands for: a single operation, or one name
// block, or a run of identical blocks.
struct Unit {
  std::string id;
  std::vector<std::size_t> ops;  // every operation, topological order
  std::vector<std::string> keys; // the blocks merged; empty for a single operation
  std::size_t opsPerBlock = 1;
  std::vector<std::size_t> folded; // tensors folded into the node (graph inputs)
  bool isBlock() const { return !keys.empty(); }
};

struct Grouping {
  std::vector<Unit> units;
  std::vector<std::size_t> unitOfOp;                  // per operation
  std::vector<bool> tensorVisible;                    // per tensor
  std::vector<std::optional<std::size_t>> foldedInto; // per tensor: unit
};

std::vector<std::pair<std::string, std::string>>
blockSignature(const ExpandedGraph& g, const std::string& key,
               const std::vector<std::size_t>& ops) {
  std::vector<std::pair<std::string, std::string>> signature;
  for (std::size_t op : ops) {
    signature.emplace_back(g.operations[op].name.substr(key.size()), g.operations[op].kernel);
  }
  return signature;
}

Grouping groupUnits(const ExpandedGraph& g, bool collapse) {
  Grouping layout;
  layout.unitOfOp.assign(g.operations.size(), 0);
  if (!collapse) {
    for (std::size_t op : g.order) {
      Unit unit;
      unit.id = "op:" + g.operations[op].name;
      unit.ops = {op};
      layout.unitOfOp[op] = layout.units.size();
      layout.units.push_back(std::move(unit));
    }
  } else {
    // Items in order of first appearance: single operations and name blocks.
    struct Item {
      std::string key; // "" for a single operation
      std::vector<std::size_t> ops;
    };
    std::vector<Item> items;
    std::map<std::string, std::size_t> itemOfKey;
    for (std::size_t op : g.order) {
      std::string key = blockKey(g.operations[op].name);
      if (key.empty()) {
        items.push_back(Item{"", {op}});
        continue;
      }
      auto [it, fresh] = itemOfKey.emplace(key, items.size());
      if (fresh) {
        items.push_back(Item{key, {}});
      }
      items[it->second].ops.push_back(op);
    }
    // Consecutive blocks with the same pattern and the same operations become one unit.
    for (std::size_t i = 0; i < items.size();) {
      Unit unit;
      if (items[i].key.empty()) {
        unit.id = "op:" + g.operations[items[i].ops[0]].name;
        unit.ops = items[i].ops;
        ++i;
      } else {
        const Item& first = items[i];
        auto signature = blockSignature(g, first.key, first.ops);
        std::string pattern = keyPattern(first.key);
        unit.id = "block:" + first.key;
        unit.opsPerBlock = first.ops.size();
        std::size_t j = i;
        while (j < items.size() && !items[j].key.empty() && keyPattern(items[j].key) == pattern &&
               blockSignature(g, items[j].key, items[j].ops) == signature) {
          unit.keys.push_back(items[j].key);
          unit.ops.insert(unit.ops.end(), items[j].ops.begin(), items[j].ops.end());
          ++j;
        }
        i = j;
      }
      for (std::size_t op : unit.ops) {
        layout.unitOfOp[op] = layout.units.size();
      }
      layout.units.push_back(std::move(unit));
    }
  }

  std::set<std::size_t> outputs(g.outputs.begin(), g.outputs.end());
  layout.tensorVisible.assign(g.tensors.size(), true);
  layout.foldedInto.assign(g.tensors.size(), std::nullopt);
  if (!collapse) {
    return layout;
  }
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& tensor = g.tensors[t];
    if (outputs.count(t) != 0 || tensor.consumers.empty()) {
      continue;
    }
    std::size_t unit = layout.unitOfOp[tensor.consumers.front()];
    bool oneUnit = std::all_of(tensor.consumers.begin(), tensor.consumers.end(),
                               [&](std::size_t c) { return layout.unitOfOp[c] == unit; });
    if (!oneUnit) {
      continue;
    }
    if (tensor.producer) {
      // Produced and consumed inside one node: an internal edge of a block.
      if (layout.unitOfOp[*tensor.producer] == unit) {
        layout.tensorVisible[t] = false;
      }
      continue;
    }
    // A graph input read by one node only, never as an operation's first input
    // (where the activations go): a weight, listed in the node's label.
    bool firstPort = false;
    for (std::size_t c : tensor.consumers) {
      const Operation& op = g.operations[c];
      if (!op.inputs.empty()) {
        const auto& ts = op.inputs.front().tensors;
        firstPort = firstPort || std::find(ts.begin(), ts.end(), t) != ts.end();
      }
    }
    if (!firstPort) {
      layout.tensorVisible[t] = false;
      layout.foldedInto[t] = unit;
      layout.units[unit].folded.push_back(t);
    }
  }
  return layout;
}

// ---------------------------------------------------------------- labels

std::string opLabel(const ExpandedGraph& g, std::size_t index, const Unit& unit,
                    const std::string* note) {
  const Operation& op = g.operations[index];
  std::vector<std::string> lines;
  lines.push_back(bold(htmlEscape(op.name)) + "  " + font(htmlEscape(op.kernel), 11, "#333333"));
  lines.push_back(mono(htmlEscape(indexLine(op))));
  for (const std::string& line : paramLines(op.application.params)) {
    lines.push_back(font(htmlEscape(line), 9));
  }
  for (std::size_t t : unit.folded) {
    // Which port reads the folded weight.
    std::string port;
    for (const graph::PortTensors& p : op.inputs) {
      if (std::find(p.tensors.begin(), p.tensors.end(), t) != p.tensors.end()) {
        port = p.port;
        break;
      }
    }
    const Tensor& tensor = g.tensors[t];
    lines.push_back(
        font(htmlEscape(port + ": " + tensor.name + "  " + typeText(tensor.type)), 9, "#333333"));
  }
  if (note != nullptr) {
    lines.push_back(font(htmlEscape(*note), 9, "#7a1f1f"));
  }
  lines.push_back(font(formatFlops(static_cast<double>(op.application.flops)), 9, "#555555"));
  return stack(lines);
}

std::string blockLabel(const ExpandedGraph& g, const Unit& unit) {
  std::size_t repeats = unit.keys.size();
  std::string name = unit.keys.front();
  if (repeats > 1) {
    name += " \xE2\x80\xA6 " + unit.keys.back(); // ellipsis
  }
  std::vector<std::string> lines;
  std::string head = bold(htmlEscape(name));
  if (repeats > 1) {
    head += "  " + font("\xC3\x97" + std::to_string(repeats), 12); // multiplication sign
  }
  lines.push_back(head);
  // Kernels of one block, in order, counted: "layernorm, linear ×3, add".
  std::vector<std::pair<std::string, std::size_t>> kernels;
  for (std::size_t i = 0; i < unit.opsPerBlock; ++i) {
    const std::string& kernel = g.operations[unit.ops[i]].kernel;
    auto it = std::find_if(kernels.begin(), kernels.end(),
                           [&](const auto& k) { return k.first == kernel; });
    if (it == kernels.end()) {
      kernels.emplace_back(kernel, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> items;
  for (const auto& [kernel, count] : kernels) {
    items.push_back(count > 1 ? kernel + " \xC3\x97" + std::to_string(count) : kernel);
  }
  std::string each = repeats > 1 ? " each" : "";
  lines.push_back(font(std::to_string(unit.opsPerBlock) + " operations" + each + ":", 9));
  for (const std::string& line : wrapItems(items, 40)) {
    lines.push_back(font(htmlEscape(line), 9));
  }
  if (!unit.folded.empty()) {
    double bytes = 0;
    for (std::size_t t : unit.folded) {
      bytes += tensorBytes(g.tensors[t].type);
    }
    lines.push_back(font(std::to_string(unit.folded.size()) + " weights, " + formatBytes(bytes) +
                             (repeats > 1 ? " in all" : ""),
                         9, "#333333"));
  }
  double flops = 0;
  for (std::size_t op : unit.ops) {
    flops += static_cast<double>(g.operations[op].application.flops);
  }
  lines.push_back(font(formatFlops(flops) + (repeats > 1 ? " in all" : ""), 9, "#555555"));
  return stack(lines);
}

std::string opsTooltip(const ExpandedGraph& g, const Unit& unit) {
  std::string text;
  for (std::size_t op : unit.ops) {
    text +=
        (text.empty() ? "" : "\n") + g.operations[op].name + " (" + g.operations[op].kernel + ")";
  }
  return escapeString(text);
}

// Several labels for one edge into a block: the first two and a count.
std::string joinLabels(const std::vector<std::string>& labels) {
  std::string text;
  for (std::size_t i = 0; i < labels.size() && i < 2; ++i) {
    text += (i > 0 ? "\n" : "") + labels[i];
  }
  if (labels.size() > 2) {
    text += "\n+" + std::to_string(labels.size() - 2) + " more";
  }
  return escapeString(text);
}

// The node of one unit: an operation, or a block of them.
void addUnitNode(Drawing& d, const ExpandedGraph& g, const Unit& unit, const ViewOptions& options) {
  std::size_t first = unit.ops.front();
  if (unit.isBlock()) {
    d.addNode(unit.id, {{"label", blockLabel(g, unit), true},
                        {"shape", unit.keys.size() > 1 ? "box3d" : "box"},
                        {"style", unit.keys.size() > 1 ? "filled" : "rounded,filled"},
                        {"fillcolor", paletteColor(first)},
                        {"tooltip", opsTooltip(g, unit)}});
  } else {
    const Operation& op = g.operations[first];
    const auto note = options.opNotes.find(first);
    Attrs attrs{{"label",
                 opLabel(g, first, unit, note == options.opNotes.end() ? nullptr : &note->second),
                 true},
                {"style", "rounded,filled"},
                {"fillcolor", paletteColor(first)}};
    std::string tip = op.name + " (" + op.kernel + ")";
    if (op.doc) {
      tip += ": " + *op.doc;
    }
    attrs.push_back({"tooltip", escapeString(tip)});
    d.addNode(unit.id, std::move(attrs));
  }
  ++d.contentNodes;
}

// Calls f(operation, port, j, result, t) for each drawn tensor t bound to a
// port of the unit's operations (the j-th tensor of `port`), on the inputs'
// side or the outputs', in order.
template <class F>
void forEachDrawnBinding(const ExpandedGraph& g, const Grouping& layout, const Unit& unit,
                         bool inputs, F f) {
  for (std::size_t op : unit.ops) {
    const Operation& operation = g.operations[op];
    const std::vector<graph::PortTensors>& ports = inputs ? operation.inputs : operation.outputs;
    const std::vector<metakernel::PortResult>& results =
        inputs ? operation.application.inputs : operation.application.outputs;
    for (std::size_t p = 0; p < ports.size(); ++p) {
      for (std::size_t j = 0; j < ports[p].tensors.size(); ++j) {
        const std::size_t t = ports[p].tensors[j];
        if (layout.tensorVisible[t]) {
          f(operation, ports[p], j, results[p], t);
        }
      }
    }
  }
}

// In-edges: tensor -> unit, one per port binding (merged for a block).
void addInEdges(Drawing& d, const ExpandedGraph& g, const Grouping& layout, const Unit& unit) {
  std::vector<std::pair<std::size_t, std::vector<std::string>>> blockInputs;
  forEachDrawnBinding(g, layout, unit, true,
                      [&](const Operation& operation, const graph::PortTensors& port, std::size_t j,
                          const metakernel::PortResult& result, std::size_t t) {
                        if (!unit.isBlock()) {
                          d.addEdge(
                              tensorId(g.tensors[t]), unit.id,
                              {{"label", escapeString(portLabel(port, j, result, g.tensors[t]))},
                               {"tooltip", escapeString(portTooltip(operation, port, j, result))}});
                          return;
                        }
                        auto it = std::find_if(blockInputs.begin(), blockInputs.end(),
                                               [&](const auto& entry) { return entry.first == t; });
                        if (it == blockInputs.end()) {
                          blockInputs.push_back({t, {}});
                          it = blockInputs.end() - 1;
                        }
                        it->second.push_back(operation.name + "." + port.port);
                      });
  for (const auto& [t, labels] : blockInputs) {
    d.addEdge(tensorId(g.tensors[t]), unit.id, {{"label", joinLabels(labels)}});
  }
}

// What the graph view's legend explains.
std::vector<LegendRow> graphLegend(const ViewOptions& options) {
  std::vector<LegendRow> legend = {
      {"BGCOLOR=\"#eeeeee\"", bold("x") + "<BR/>" + font("dtype [shape]", 9), "graph input"},
      {"", bold("t") + "<BR/>" + font("dtype [shape]", 9), "tensor an operation produces"},
      {"BORDER=\"3\"", bold("y"), "graph output (double border)"},
      {"BGCOLOR=\"" + paletteColor(0) + "\"", bold("op") + " kernel<BR/>" + mono("zr[index space]"),
       "operation: kernel, index space (dims i0, i1, ...),\nparams, FLOPs"},
      {"", mono("X: [i0, :]"),
       "edge: port, and the region of the tensor one index\npoint i touches (':' whole dim, "
       "'a:b' fixed range,\n'e:+n' n elements from e)"},
  };
  if (options.collapse) {
    legend.push_back({"BGCOLOR=\"" + paletteColor(1) + "\"",
                      bold("block0 \xE2\x80\xA6 block3") + " " + "\xC3\x97" + "4",
                      "name blocks (block3.*) as one node; identical\nconsecutive blocks merged; "
                      "weights listed\nin the node that reads them"});
  }
  return legend;
}

} // namespace

Drawing graphView(const ExpandedGraph& g, const ViewOptions& options) {
  Grouping layout = groupUnits(g, options.collapse);
  std::set<std::size_t> outputs(g.outputs.begin(), g.outputs.end());

  Drawing d;
  d.name = g.name;
  setCommonDefaults(d, options.rankdir);
  std::size_t visibleTensors = static_cast<std::size_t>(
      std::count(layout.tensorVisible.begin(), layout.tensorVisible.end(), true));
  std::string facts = std::to_string(g.operations.size()) + " operations \xC2\xB7 " +
                      std::to_string(g.tensors.size()) + " tensors \xC2\xB7 " +
                      formatFlops(static_cast<double>(g.totalFlops()));
  if (options.collapse) {
    facts +=
        " \xC2\xB7 collapsed to " + std::to_string(layout.units.size() + visibleTensors) + " nodes";
  }
  d.graphAttrs.push_back({"label", title(g.name, facts), true});
  if (g.doc) {
    d.graphAttrs.push_back({"tooltip", escapeString(*g.doc)});
  }

  std::vector<bool> emitted(g.tensors.size(), false);
  auto emitTensor = [&](std::size_t t) {
    if (emitted[t] || !layout.tensorVisible[t]) {
      return;
    }
    emitted[t] = true;
    const Tensor& tensor = g.tensors[t];
    Attrs attrs{{"label", tensorLabel(tensor), true}};
    if (tensor.isGraphInput()) {
      attrs.push_back({"fillcolor", "#eeeeee"});
    }
    if (outputs.count(t) != 0) {
      attrs.push_back({"peripheries", "2"});
    }
    attrs.push_back({"tooltip", escapeString(tensor.name + ": " + typeText(tensor.type))});
    d.addNode(tensorId(tensor), std::move(attrs));
    ++d.contentNodes;
  };

  for (std::size_t u = 0; u < layout.units.size(); ++u) {
    const Unit& unit = layout.units[u];
    // Inputs of the unit first, so that the DOT text reads in dataflow order.
    for (std::size_t op : unit.ops) {
      for (const graph::PortTensors& port : g.operations[op].inputs) {
        for (std::size_t t : port.tensors) {
          emitTensor(t);
        }
      }
    }
    addUnitNode(d, g, unit, options);
    addInEdges(d, g, layout, unit);

    // Out-edges: unit -> produced tensor.
    forEachDrawnBinding(
        g, layout, unit, false,
        [&](const Operation& operation, const graph::PortTensors& port, std::size_t j,
            const metakernel::PortResult& result, std::size_t t) {
          emitTensor(t);
          std::string label = unit.isBlock() ? operation.name + "." + port.port
                                             : portLabel(port, j, result, g.tensors[t]);
          d.addEdge(unit.id, tensorId(g.tensors[t]),
                    {{"label", escapeString(label)},
                     {"tooltip", escapeString(portTooltip(operation, port, j, result))}});
        });
  }
  // Graph inputs nothing reads.
  for (std::size_t t = 0; t < g.tensors.size(); ++t) {
    emitTensor(t);
  }

  addLegend(d, graphLegend(options));
  return d;
}

} // namespace tapestry::render
