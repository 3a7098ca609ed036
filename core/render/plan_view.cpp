// The plan view: one cluster per device (inside one per node on multi-node
// targets), the shards inside with their index ranges and scheduled times,
// local reads, transfers with their bytes (from the host, or between devices),
// and the reductions that combine partial outputs. One colour per operation,
// the same as in the graph view. With --collapse, one node per operation and
// device.
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

enum class EdgeKind { Local, Host, Transfer, Partial };

// One edge to draw; edges with the same ends and kind are merged.
struct PlanEdge {
  std::string tail;
  std::string head;
  EdgeKind kind;
  std::vector<std::string> tensors; // names, in first-seen order
  std::int64_t bytes = 0;           // transfers: what moves
  std::size_t count = 0;            // transfers merged
  bool labelled = true;
};

class PlanDrawer {
public:
  PlanDrawer(const plan::LoadedPlan& loaded, const ViewOptions& options)
      : p_(loaded), g_(loaded.graph), options_(options) {}

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
};

std::string edgeLabel(const PlanEdge& e) {
  std::string names;
  for (std::size_t i = 0; i < e.tensors.size() && i < 3; ++i) {
    names += (i > 0 ? ", " : "") + e.tensors[i];
  }
  if (e.tensors.size() > 3) {
    names += ", +" + std::to_string(e.tensors.size() - 3);
  }
  if (e.kind == EdgeKind::Host || e.kind == EdgeKind::Transfer ||
      (e.kind == EdgeKind::Partial && e.bytes > 0)) {
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
          if (t.afterShard) {
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
      addEdge(shardNode(red.op, red.shards[i]), id, EdgeKind::Partial, red.tensor, moved);
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
    if (e.labelled) {
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
    Subgraph cluster;
    cluster.id = "dev" + std::to_string(dev);
    std::string label =
        "device " + std::to_string(dev) + " \xC2\xB7 " + cost::deviceKindName(target.devices.kind);
    if (static_cast<std::size_t>(dev) < p_.simulation.peakPerDevice.size()) {
      label += " \xC2\xB7 peak " +
               formatBytes(static_cast<double>(p_.simulation.peakPerDevice[dev])) + " of " +
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
  emitEdges(d);
  addClusters(d);
  addLegend(d);
  return d;
}

} // namespace

Drawing planView(const plan::LoadedPlan& plan, const ViewOptions& options) {
  return PlanDrawer(plan, options).draw();
}

} // namespace tapestry::render
