// The plan view: one cluster per device (inside one per node on multi-node
// targets), the shards inside with their index ranges and scheduled times,
// local reads, transfers with their bytes (from the host, or between devices),
// and the reductions that combine partial outputs. One colour per operation,
// the same as in the graph view. With --collapse, one node per operation and
// device.
//
// At scale (kPanelDevices devices or more) no edge crosses a device's
// cluster: what arrives from the host or another device comes in through one
// node per source inside the receiving cluster ("from the host", "from device
// 3", listing each tensor and its bytes), and the clusters are laid out as a
// grid of panels (panelColumns a row), stacked by invisible edges between
// anchor points. dot then lays each cluster out on its own, so clusters never
// overlap and no host edge crosses the page. With --collapse, devices that do
// the same work (the same operations on shards of the same extents) are one
// panel.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/render/render.hpp"
#include "core/render/view_util.hpp"

namespace tapestry::render {

namespace {

using namespace detail;

const char* kTransferColor = "#d62728"; // between devices
const char* kHostColor = "#1f77b4";     // host -> device
const char* kLocalColor = "#9a9a9a";    // read in place

// From this many devices on, the plan view draws device panels (see above).
constexpr int kPanelDevices = 4;
// Panels a row: three up to nine devices, two beyond (a transformer block's
// device panel is about 800 to 1,050 points wide, and the picture should stay
// within 3,000 points, 4,000 pixels at 96 dpi).
// Panels a row: 3 up to 9 devices, else 2; and 2 as well once the panels
// hold more than kWidePanelNodes nodes on average (a plan that runs most ops
// on every device: each panel then lays out wider).
constexpr std::size_t kWidePanelNodes = 12;

int panelColumns(int devices, std::size_t nodesPerPanel) {
  return devices <= 9 && nodesPerPanel <= kWidePanelNodes ? 3 : 2;
}

enum class EdgeKind { Local, Host, Transfer, Partial };

// What arrives on a device from one place (at scale): the tensors and bytes.
struct Arrivals {
  int from = plan::kHost;
  int to = 0;
  std::vector<std::pair<std::string, std::int64_t>> items; // tensor (or "partial h"), bytes
};

// One edge to draw; edges with the same ends and kind are merged.
struct PlanEdge {
  std::string tail;
  std::string head;
  EdgeKind kind;
  std::vector<std::string> tensors; // names, in first-seen order
  std::int64_t bytes = 0;           // transfers: what moves
  std::size_t count = 0;            // transfers merged
  bool labelled = true;
  bool namesOnly = false; // at scale: the arrivals node carries the bytes
};

class PlanDrawer {
public:
  PlanDrawer(const plan::LoadedPlan& loaded, const ViewOptions& options)
      : p_(loaded), g_(loaded.graph), options_(options),
        panels_(std::max(loaded.target.deviceCount(), loaded.plan.deviceCount) >= kPanelDevices) {}

  Drawing draw();

private:
  std::string shardNode(std::size_t op, std::size_t shard) const {
    const plan::Shard& s = p_.plan.ops[op].shards[shard];
    if (options_.collapse) {
      return "s:" + g_.operations[op].name + "@" + std::to_string(s.device);
    }
    return "s:" + g_.operations[op].name + "#" + std::to_string(shard);
  }
  // Collapsed: one node for every graph input the host sends.
  std::string hostNode(std::size_t tensor) const {
    return options_.collapse ? std::string("host:inputs") : "host:" + g_.tensors[tensor].name;
  }
  std::string reductionNode(std::size_t r) const { return "r:" + std::to_string(r); }
  std::string residentNode(std::size_t r) const { return "res:" + std::to_string(r); }

  void addEdge(const std::string& tail, const std::string& head, EdgeKind kind, std::size_t tensor,
               std::int64_t bytes, bool labelled = true);
  // At scale: `tensor` (or `what`) arriving on device `to` from `from` for
  // `head`, through the arrivals node of (from, to).
  void addArrival(int from, int to, const std::string& head, EdgeKind kind, std::size_t tensor,
                  std::int64_t bytes, const std::string& what);
  void addArrivalNodes(Drawing& d);
  void foldAlikePanels(Drawing& d);
  void addPanelRows(Drawing& d);
  void placeNode(int device, const std::string& id) { deviceNodes_[device].push_back(id); }
  void addShardNodes(Drawing& d);
  void addReads();
  void addReductions(Drawing& d);
  void emitEdges(Drawing& d) const;
  void addClusters(Drawing& d);
  void addLegend(Drawing& d) const;

  const plan::LoadedPlan& p_;
  const graph::ExpandedGraph& g_;
  const ViewOptions& options_;
  std::vector<PlanEdge> edges_;
  std::map<std::tuple<std::string, std::string, int>, std::size_t> edgeIndex_;
  std::map<int, std::vector<std::string>> deviceNodes_;
  std::vector<std::string> hostNodes_;
  std::set<std::size_t> hostTensors_;
  std::set<std::size_t> firstReaderSeen_; // transfers already drawn with their label
  bool panels_ = false;                   // at scale: device panels, no crossing edges
  // At scale with --collapse: per device, the device whose panel stands for
  // it (itself, or the first device with the same work); and the panels drawn.
  std::vector<int> shownAs_;
  std::vector<int> panels_drawn_;
  std::vector<Arrivals> arrivals_;
  std::map<std::pair<int, int>, std::size_t> arrivalIndex_;
};

// One node per device for everything that arrives there (at scale).
std::string arrivalsNode(int to) {
  return "in:" + std::to_string(to);
}

std::string edgeLabel(const PlanEdge& e) {
  std::string names;
  for (std::size_t i = 0; i < e.tensors.size() && i < 3; ++i) {
    names += (i > 0 ? ", " : "") + e.tensors[i];
  }
  if (e.tensors.size() > 3) {
    names += ", +" + std::to_string(e.tensors.size() - 3);
  }
  if (!e.namesOnly && (e.kind == EdgeKind::Host || e.kind == EdgeKind::Transfer ||
                       (e.kind == EdgeKind::Partial && e.bytes > 0))) {
    return names + "\n" + formatBytes(static_cast<double>(e.bytes));
  }
  return names;
}

void PlanDrawer::addEdge(const std::string& tail, const std::string& head, EdgeKind kind,
                         std::size_t tensor, std::int64_t bytes, bool labelled) {
  auto key = std::make_tuple(tail, head, static_cast<int>(kind));
  auto [it, fresh] = edgeIndex_.emplace(key, edges_.size());
  if (fresh) {
    edges_.push_back(PlanEdge{tail, head, kind, {}, 0, 0, labelled});
  }
  PlanEdge& e = edges_[it->second];
  const std::string& name = g_.tensors[tensor].name;
  if (std::find(e.tensors.begin(), e.tensors.end(), name) == e.tensors.end()) {
    e.tensors.push_back(name);
  }
  e.bytes += bytes;
  e.labelled = e.labelled || labelled;
  if (bytes > 0) {
    ++e.count;
  }
}

void PlanDrawer::addArrival(int from, int to, const std::string& head, EdgeKind kind,
                            std::size_t tensor, std::int64_t bytes, const std::string& what) {
  auto [it, fresh] = arrivalIndex_.emplace(std::make_pair(from, to), arrivals_.size());
  if (fresh) {
    arrivals_.push_back(Arrivals{from, to, {}});
  }
  Arrivals& a = arrivals_[it->second];
  auto item = std::find_if(a.items.begin(), a.items.end(),
                           [&](const auto& entry) { return entry.first == what; });
  if (item == a.items.end()) {
    a.items.emplace_back(what, bytes);
  } else {
    item->second += bytes;
  }
  const std::string tail = arrivalsNode(to);
  addEdge(tail, head, kind, tensor, 0);
  edges_[edgeIndex_.at(std::make_tuple(tail, head, static_cast<int>(kind)))].namesOnly = true;
}

// One node per device listing what arrives, by source, in the device's cluster.
void PlanDrawer::addArrivalNodes(Drawing& d) {
  constexpr std::size_t kShown = 4;
  std::map<int, std::vector<std::string>> lines; // per device
  for (const Arrivals& a : arrivals_) {
    const bool host = a.from == plan::kHost;
    std::int64_t total = 0;
    std::string items;
    for (std::size_t i = 0; i < a.items.size(); ++i) {
      total += a.items[i].second;
      if (i < kShown) {
        items += (i > 0 ? ", " : "") + htmlEscape(a.items[i].first);
      }
    }
    if (a.items.size() > kShown) {
      items += ", +" + std::to_string(a.items.size() - kShown);
    }
    lines[a.to].push_back(
        font(bold(host ? "host" : "device " + std::to_string(a.from)), 9,
             host ? kHostColor : kTransferColor) +
        font(": " + items + " \xC2\xB7 " + formatBytes(static_cast<double>(total)), 9));
  }
  for (auto& [to, rows] : lines) {
    rows.insert(rows.begin(), font(bold("arrives"), 10));
    const std::string id = arrivalsNode(to);
    d.addNode(id, {{"label", stack(rows), true},
                   {"fillcolor", "#ffffff"},
                   {"color", "#888888"},
                   {"style", "filled,dashed"}});
    ++d.contentNodes;
    auto& nodes = deviceNodes_[to];
    nodes.insert(nodes.begin(), id);
  }
}

void PlanDrawer::addShardNodes(Drawing& d) {
  for (std::size_t op : g_.order) {
    const plan::OpPlan& opPlan = p_.plan.ops[op];
    const graph::Operation& operation = g_.operations[op];
    // Collapsed: one node per (op, device) listing its shards.
    std::map<std::string, std::vector<std::size_t>> shardsOfNode;
    std::vector<std::string> order;
    for (std::size_t s = 0; s < opPlan.shards.size(); ++s) {
      std::string id = shardNode(op, s);
      if (shardsOfNode.find(id) == shardsOfNode.end()) {
        order.push_back(id);
      }
      shardsOfNode[id].push_back(s);
    }
    for (const std::string& id : order) {
      const std::vector<std::size_t>& shards = shardsOfNode[id];
      const plan::Shard& first = opPlan.shards[shards.front()];
      std::vector<std::string> lines;
      std::string head = bold(htmlEscape(operation.name));
      if (shards.size() == 1) {
        head += " " + font("#" + std::to_string(shards.front()), 10, "#333333");
      } else {
        head += " " + font("\xC3\x97" + std::to_string(shards.size()) + " shards", 10, "#333333");
      }
      lines.push_back(head);
      double start = 0;
      double end = 0;
      bool anyTime = false;
      for (std::size_t i = 0; i < shards.size(); ++i) {
        std::size_t s = shards[i];
        if (i < 3) {
          lines.push_back(mono(htmlEscape(opPlan.shards[s].index.toString())));
        } else if (i == 3) {
          lines.push_back(font("+" + std::to_string(shards.size() - 3) + " more", 9));
        }
        if (op < p_.simulation.shards.size() && s < p_.simulation.shards[op].size()) {
          const cost::Interval& t = p_.simulation.shards[op][s];
          start = anyTime ? std::min(start, t.start) : t.start;
          end = anyTime ? std::max(end, t.end) : t.end;
          anyTime = true;
        }
      }
      if (anyTime) {
        lines.push_back(font(formatSeconds(start) + " \xE2\x80\x93 " + formatSeconds(end), 9,
                             "#444444")); // en dash
      }
      if (first.partial) {
        lines.push_back(font("partial (reduced below)", 9, "#444444"));
      }
      std::string tip = operation.name + " (" + operation.kernel + ") split " +
                        formatInts(opPlan.choice.split) + " on device " +
                        std::to_string(first.device);
      d.addNode(id, {{"label", stack(lines), true},
                     {"style", "rounded,filled"},
                     {"fillcolor", paletteColor(op)},
                     {"tooltip", escapeString(tip)}});
      ++d.contentNodes;
      placeNode(first.device, id);
    }
  }
}

void PlanDrawer::addReads() {
  for (std::size_t op : g_.order) {
    const plan::OpPlan& opPlan = p_.plan.ops[op];
    for (std::size_t s = 0; s < opPlan.shards.size(); ++s) {
      std::string head = shardNode(op, s);
      for (const plan::Source& source : opPlan.shards[s].reads) {
        switch (source.kind) {
        case plan::Source::Kind::Shard:
          addEdge(shardNode(source.index, source.shard), head, EdgeKind::Local, source.tensor, 0);
          break;
        case plan::Source::Kind::Reduction:
          addEdge(reductionNode(source.index), head, EdgeKind::Local, source.tensor, 0);
          break;
        case plan::Source::Kind::Resident:
          addEdge(residentNode(source.index), head, EdgeKind::Local, source.tensor, 0);
          break;
        case plan::Source::Kind::Transfer: {
          const plan::Transfer& t = p_.plan.transfers[source.index];
          // The transfer's bytes count once, on the edge to its first reader;
          // later readers on that device read the arrived region in place.
          bool first = firstReaderSeen_.insert(source.index).second;
          std::int64_t bytes = first ? t.bytes : 0;
          if (panels_) {
            addArrival(t.from, t.to, head,
                       t.from == plan::kHost ? EdgeKind::Host : EdgeKind::Transfer, t.tensor, bytes,
                       g_.tensors[t.tensor].name);
          } else if (t.afterShard) {
            addEdge(shardNode(t.afterShard->first, t.afterShard->second), head, EdgeKind::Transfer,
                    t.tensor, bytes, first);
          } else if (t.afterReduction) {
            addEdge(reductionNode(*t.afterReduction), head, EdgeKind::Transfer, t.tensor, bytes,
                    first);
          } else {
            hostTensors_.insert(t.tensor);
            addEdge(hostNode(t.tensor), head, EdgeKind::Host, t.tensor, bytes, first);
          }
          break;
        }
        }
      }
    }
  }
}

void PlanDrawer::addReductions(Drawing& d) {
  for (std::size_t r = 0; r < p_.plan.reductions.size(); ++r) {
    const plan::Reduction& red = p_.plan.reductions[r];
    std::string id = reductionNode(r);
    std::vector<std::string> lines;
    lines.push_back(bold(htmlEscape(red.combine) + " " + htmlEscape(g_.tensors[red.tensor].name)));
    lines.push_back(mono(htmlEscape(red.region.toString())));
    lines.push_back(font(std::to_string(red.shards.size()) + " partials \xC2\xB7 " +
                             formatBytes(static_cast<double>(red.bytes)),
                         9, "#444444"));
    d.addNode(id, {{"label", stack(lines), true},
                   {"shape", "octagon"},
                   {"style", "filled"},
                   {"fillcolor", paletteColor(red.op)},
                   {"margin", "0.02,0.02"}});
    ++d.contentNodes;
    placeNode(red.device, id);
    // Partials flow into the reduction; a step that moves one is a transfer.
    for (std::size_t i = 0; i < red.shards.size(); ++i) {
      std::int64_t moved = 0;
      for (const plan::Reduction::Step& step : red.steps) {
        if (step.from == i && step.transfer) {
          moved += p_.plan.transfers[*step.transfer].bytes;
        }
      }
      const int from = p_.plan.ops[red.op].shards[red.shards[i]].device;
      if (panels_ && from != red.device) {
        addArrival(from, red.device, id, EdgeKind::Partial, red.tensor, moved,
                   "partial " + g_.tensors[red.tensor].name);
      } else {
        addEdge(shardNode(red.op, red.shards[i]), id, EdgeKind::Partial, red.tensor, moved);
      }
    }
  }
  // Graph inputs resident on a device from the start (--inputs-on free).
  for (std::size_t r = 0; r < p_.plan.residents.size(); ++r) {
    const plan::Resident& res = p_.plan.residents[r];
    std::string id = residentNode(r);
    d.addNode(id, {{"label",
                    stack({bold(htmlEscape(g_.tensors[res.tensor].name)),
                           mono(htmlEscape(res.region.toString())),
                           font("resident \xC2\xB7 " + formatBytes(static_cast<double>(res.bytes)),
                                9, "#444444")}),
                    true},
                   {"fillcolor", "#eeeeee"}});
    ++d.contentNodes;
    placeNode(res.device, id);
  }
}

void PlanDrawer::emitEdges(Drawing& d) const {
  for (const PlanEdge& e : edges_) {
    Attrs attrs;
    if (e.namesOnly) {
      // From a device's arrivals node (at scale): the node lists the tensors;
      // the edge says which on hover, so that no label widens the cluster.
      attrs.push_back({"tooltip", escapeString(edgeLabel(e))});
      // Nor does it pull its heads sideways: with many shards on a device,
      // its edges to all of them drift the panel's column to the right.
      attrs.push_back({"weight", "0"});
    } else if (e.labelled) {
      attrs.push_back({"label", escapeString(edgeLabel(e))});
    }
    switch (e.kind) {
    case EdgeKind::Local:
      attrs.push_back({"color", kLocalColor});
      break;
    case EdgeKind::Host:
      attrs.push_back({"color", kHostColor});
      attrs.push_back({"fontcolor", kHostColor});
      break;
    case EdgeKind::Transfer:
      attrs.push_back({"color", kTransferColor});
      attrs.push_back({"fontcolor", kTransferColor});
      attrs.push_back({"penwidth", e.bytes > 0 ? "1.8" : "1"});
      break;
    case EdgeKind::Partial:
      attrs.push_back({"style", "dashed"});
      attrs.push_back({"color", e.bytes > 0 ? kTransferColor : kLocalColor});
      if (e.bytes > 0) {
        attrs.push_back({"fontcolor", kTransferColor});
      }
      break;
    }
    if (!e.labelled) {
      attrs.push_back({"style", "dotted"});
    }
    d.addEdge(e.tail, e.head, std::move(attrs));
  }
}

// What a device does, up to where: per operation its shards' index extents
// (not their offsets), and its reductions' region extents. Devices with equal
// signatures run the same work on different slices of the tensors.
std::string deviceSignature(const plan::LoadedPlan& p, int device) {
  std::string sig;
  auto extents = [](const ZRange& r) {
    std::string text;
    const ZPoint shape = r.shape();
    for (std::int64_t e : shape.vector()) {
      text += std::to_string(e) + ",";
    }
    return text;
  };
  for (std::size_t op = 0; op < p.plan.ops.size(); ++op) {
    for (const plan::Shard& s : p.plan.ops[op].shards) {
      if (s.device == device) {
        sig += std::to_string(op) + ":" + extents(s.index) + ";";
      }
    }
  }
  for (const plan::Reduction& r : p.plan.reductions) {
    if (r.device == device) {
      sig += "r" + std::to_string(r.op) + ":" + extents(r.region) + ";";
    }
  }
  return sig;
}

// At scale with --collapse: devices that do the same work (equal signatures)
// are drawn once, as the first of them; the others' nodes and edges go.
void PlanDrawer::foldAlikePanels(Drawing& d) {
  const int devices = std::max(p_.target.deviceCount(), p_.plan.deviceCount);
  shownAs_.assign(static_cast<std::size_t>(devices), 0);
  std::map<std::string, int> first;
  for (int dev = 0; dev < devices; ++dev) {
    const std::string sig = deviceSignature(p_, dev);
    const int shown = options_.collapse ? first.emplace(sig, dev).first->second : dev;
    shownAs_[static_cast<std::size_t>(dev)] = shown;
    if (shown == dev) {
      panels_drawn_.push_back(dev);
    }
  }
  std::set<std::string> dropped;
  for (int dev = 0; dev < devices; ++dev) {
    if (shownAs_[static_cast<std::size_t>(dev)] != dev) {
      auto it = deviceNodes_.find(dev);
      if (it != deviceNodes_.end()) {
        dropped.insert(it->second.begin(), it->second.end());
        deviceNodes_.erase(it);
      }
    }
  }
  if (dropped.empty()) {
    return;
  }
  const auto before = d.nodes.size();
  d.nodes.erase(std::remove_if(d.nodes.begin(), d.nodes.end(),
                               [&](const Node& n) { return dropped.count(n.id) > 0; }),
                d.nodes.end());
  d.contentNodes -= before - d.nodes.size();
  edges_.erase(std::remove_if(edges_.begin(), edges_.end(),
                              [&](const PlanEdge& e) {
                                return dropped.count(e.tail) > 0 || dropped.count(e.head) > 0;
                              }),
               edges_.end());
}

// At scale: each device's cluster between two invisible anchors, and each row
// of kPanelColumns clusters below the one before it.
void PlanDrawer::addPanelRows(Drawing& d) {
  if (!panels_) {
    return;
  }
  const int devices = std::max(p_.target.deviceCount(), p_.plan.deviceCount);
  const Attrs invisible{{"style", "invis"}};
  std::size_t drawnNodes = 0;
  for (int dev : panels_drawn_) {
    drawnNodes += deviceNodes_[dev].size();
  }
  const int columns =
      panelColumns(devices, panels_drawn_.empty() ? 0 : drawnNodes / panels_drawn_.size());
  for (std::size_t i = 0; i < panels_drawn_.size(); ++i) {
    const int dev = panels_drawn_[i];
    std::vector<std::string>& nodes = deviceNodes_[dev];
    if (nodes.empty()) {
      const std::string idle = "idle:" + std::to_string(dev);
      d.addNode(idle, {{"label", "idle"}, {"shape", "plaintext"}, {"style", ""}});
      nodes.push_back(idle);
    }
    const std::string top = "top:" + std::to_string(dev);
    const std::string bottom = "bottom:" + std::to_string(dev);
    for (const std::string& anchor : {top, bottom}) {
      d.addNode(anchor, {{"shape", "point"}, {"width", "0.01"}, {"style", "invis"}});
    }
    for (const std::string& n : nodes) {
      d.addEdge(top, n, invisible);
      d.addEdge(n, bottom, invisible);
    }
    nodes.insert(nodes.begin(), top);
    nodes.push_back(bottom);
    if (i >= static_cast<std::size_t>(columns)) {
      d.addEdge("bottom:" + std::to_string(panels_drawn_[i - static_cast<std::size_t>(columns)]),
                top, invisible);
    }
  }
}

void PlanDrawer::addClusters(Drawing& d) {
  if (!hostNodes_.empty()) {
    Subgraph host;
    host.id = "host";
    host.attrs = {{"label", "host"},
                  {"style", "rounded,filled"},
                  {"fillcolor", "#f4f8fc"},
                  {"color", kHostColor},
                  {"fontcolor", kHostColor}};
    host.nodes = hostNodes_;
    d.subgraphs.push_back(std::move(host));
  }
  const cost::Target& target = p_.target;
  int devices = std::max(target.deviceCount(), p_.plan.deviceCount);
  std::vector<Subgraph> machines(static_cast<std::size_t>(std::max(1, target.nodeCount())));
  for (int dev = 0; dev < devices; ++dev) {
    std::string who = "device " + std::to_string(dev);
    std::int64_t peakShown = static_cast<std::size_t>(dev) < p_.simulation.peakPerDevice.size()
                                 ? p_.simulation.peakPerDevice[static_cast<std::size_t>(dev)]
                                 : 0;
    if (!shownAs_.empty()) {
      if (shownAs_[static_cast<std::size_t>(dev)] != dev) {
        continue; // folded into an alike device's panel (--collapse)
      }
      std::vector<std::int64_t> alike;
      for (int other = 0; other < devices; ++other) {
        if (shownAs_[static_cast<std::size_t>(other)] == dev) {
          alike.push_back(other);
        }
      }
      if (alike.size() > 1) {
        who = "devices " + formatInts(alike) + " alike (device " + std::to_string(dev) + " shown)";
      }
      for (std::int64_t other : alike) { // the panel's peak: the largest of them
        if (static_cast<std::size_t>(other) < p_.simulation.peakPerDevice.size()) {
          peakShown =
              std::max(peakShown, p_.simulation.peakPerDevice[static_cast<std::size_t>(other)]);
        }
      }
    }
    Subgraph cluster;
    cluster.id = "dev" + std::to_string(dev);
    std::string label = who + " \xC2\xB7 " + cost::deviceKindName(target.devices.kind);
    if (static_cast<std::size_t>(dev) < p_.simulation.peakPerDevice.size()) {
      label += " \xC2\xB7 peak " + formatBytes(static_cast<double>(peakShown)) + " of " +
               formatBytes(static_cast<double>(target.devices.memory));
    }
    cluster.attrs = {{"label", label},
                     {"style", "rounded,filled"},
                     {"fillcolor", "#f7f7f7"},
                     {"color", "#999999"},
                     {"fontsize", "12"}};
    auto it = deviceNodes_.find(dev);
    if (it != deviceNodes_.end()) {
      cluster.nodes = it->second;
    } else {
      // Graphviz drops empty clusters; an idle device still shows.
      std::string idle = "idle:" + std::to_string(dev);
      d.addNode(idle, {{"label", "idle"}, {"shape", "plaintext"}, {"style", ""}});
      cluster.nodes.push_back(idle);
    }
    int node = dev < target.deviceCount() ? target.nodeOf(dev) : 0;
    machines[static_cast<std::size_t>(node)].children.push_back(std::move(cluster));
  }
  if (machines.size() == 1) {
    for (Subgraph& cluster : machines.front().children) {
      d.subgraphs.push_back(std::move(cluster));
    }
    return;
  }
  for (std::size_t n = 0; n < machines.size(); ++n) {
    machines[n].id = "node" + std::to_string(n);
    machines[n].attrs = {{"label", "node " + std::to_string(n)},
                         {"style", "rounded"},
                         {"color", "#666666"},
                         {"fontsize", "13"}};
    d.subgraphs.push_back(std::move(machines[n]));
  }
}

void PlanDrawer::addLegend(Drawing& d) const {
  std::vector<LegendRow> rows;
  for (std::size_t op : g_.order) {
    const plan::OpPlan& opPlan = p_.plan.ops[op];
    rows.push_back(
        {"BGCOLOR=\"" + paletteColor(op) + "\"", bold(htmlEscape(g_.operations[op].name)),
         g_.operations[op].kernel + ", split " + formatInts(opPlan.choice.split) + " on devices " +
             formatInts(std::vector<std::int64_t>(opPlan.choice.devices.begin(),
                                                  opPlan.choice.devices.end()))});
  }
  rows.push_back({"", font("x<BR/>196 KiB", 9, kHostColor), "transfer from the host (bytes)"});
  rows.push_back({"", font("h<BR/>64 KiB", 9, kTransferColor), "transfer between devices"});
  rows.push_back({"", font("h", 9, kLocalColor), "read in place on the device"});
  rows.push_back({"", font("- - -", 9), "partial output into its reduction"});
  detail::addLegend(d, rows);
}

Drawing PlanDrawer::draw() {
  Drawing d;
  d.name = g_.name;
  setCommonDefaults(d, options_.rankdir);
  const cost::Objectives& o = p_.simulation.objectives;
  std::string facts = std::to_string(p_.plan.shardCount()) + " shards on " +
                      std::to_string(p_.target.deviceCount()) + " devices (" + p_.target.name +
                      ") \xC2\xB7 " + formatSeconds(o.timeS) + " \xC2\xB7 peak " +
                      formatBytes(static_cast<double>(o.peakMemoryBytes)) + "/device \xC2\xB7 " +
                      formatBytes(static_cast<double>(o.transferBytes)) + " moved";
  if (!o.feasible) {
    facts += " \xC2\xB7 INFEASIBLE (over device memory)";
  }
  d.graphAttrs.push_back({"label", title(g_.name + " plan", facts), true});

  addReads();
  // Host nodes first so the layout puts them at the top.
  if (options_.collapse && !hostTensors_.empty()) {
    std::vector<std::string> names;
    for (std::size_t t : hostTensors_) {
      names.push_back(g_.tensors[t].name);
    }
    std::vector<std::string> lines{bold("graph inputs")};
    for (std::size_t i = 0; i < names.size(); i += 4) {
      std::string line;
      for (std::size_t j = i; j < names.size() && j < i + 4; ++j) {
        line += (j > i ? ", " : "") + names[j];
      }
      lines.push_back(font(htmlEscape(line), 9));
    }
    d.addNode("host:inputs", {{"label", stack(lines), true}, {"fillcolor", "#eeeeee"}});
    ++d.contentNodes;
    hostNodes_.push_back("host:inputs");
  } else {
    for (std::size_t t : hostTensors_) {
      std::string id = hostNode(t);
      const graph::Tensor& tensor = g_.tensors[t];
      d.addNode(
          id,
          {{"label",
            stack({bold(htmlEscape(tensor.name)),
                   font(htmlEscape(tensor.type.dtype + " " + formatInts(tensor.type.shape)), 9)}),
            true},
           {"fillcolor", "#eeeeee"}});
      ++d.contentNodes;
      hostNodes_.push_back(id);
    }
  }
  addShardNodes(d);
  addReductions(d);
  addArrivalNodes(d);
  if (panels_) {
    foldAlikePanels(d);
  }
  emitEdges(d);
  addPanelRows(d);
  addClusters(d);
  addLegend(d);
  if (panels_) {
    // The legend goes below the panels instead of taking a column of its own.
    d.addEdge("bottom:" + std::to_string(panels_drawn_.back()), "legend", {{"style", "invis"}});
  }
  return d;
}

} // namespace

Drawing planView(const plan::LoadedPlan& plan, const ViewOptions& options) {
  return PlanDrawer(plan, options).draw();
}

bool needsOverview(const plan::LoadedPlan& plan) {
  std::size_t shards = 0;
  for (const plan::OpPlan& op : plan.plan.ops) {
    shards += op.shards.size();
  }
  return plan.graph.operations.size() > kOverviewOperations || shards > kOverviewShards;
}

Drawing planOverview(const plan::LoadedPlan& plan, const ViewOptions& options) {
  const graph::ExpandedGraph& g = plan.graph;
  ViewOptions noted = options;
  for (std::size_t op = 0; op < g.operations.size(); ++op) {
    const plan::OpPlan& opPlan = plan.plan.ops[op];
    noted.opNotes[op] = "split " + formatInts(opPlan.choice.split) + " on devices " +
                        formatInts(std::vector<std::int64_t>(opPlan.choice.devices.begin(),
                                                             opPlan.choice.devices.end()));
  }
  Drawing d = graphView(g, noted);
  const cost::Objectives& o = plan.simulation.objectives;
  const std::string facts = std::to_string(plan.plan.shardCount()) + " shards of " +
                            std::to_string(g.operations.size()) + " operations on " +
                            std::to_string(plan.target.deviceCount()) + " devices (" +
                            plan.target.name + ") \xC2\xB7 " + formatSeconds(o.timeS) +
                            " \xC2\xB7 one node per operation (--view timeline draws every shard)";
  for (Attr& a : d.graphAttrs) {
    if (a.name == "label") {
      a.value = title(g.name + " plan overview", facts);
    }
  }
  return d;
}

} // namespace tapestry::render
