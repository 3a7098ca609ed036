// The JSON of a plan's operations, reductions and transfers (plan/v1's
// sections; core/cost/plan_file.cpp writes and checks the whole file).
#include "core/plan/plan.hpp"

#include <string>
#include <utility>

#include "core/json/layout.hpp"
#include "core/zspace/zspace_json.hpp"

namespace tapestry::plan {

// ---------------------------------------------------------------- JSON

namespace {

void append(Json& object, std::string key, Json value) {
  json::appendMember(object, std::move(key), std::move(value));
}

Json selectionsJson(const graph::ExpandedGraph& g, const std::vector<graph::PortTensors>& ports,
                    const std::vector<std::vector<Selection>>& selections) {
  Json out = Json::object();
  for (std::size_t p = 0; p < ports.size(); ++p) {
    if (ports[p].tensors.empty()) {
      continue; // an optional input left out: no selections (as in the graph)
    }
    Json list = Json::array();
    for (const Selection& s : selections[p]) {
      Json item = Json::object();
      append(item, "tensor", g.tensors[s.tensor].name);
      append(item, "range", toJson(s.range));
      list.push_back(std::move(item));
    }
    append(out, ports[p].port, std::move(list));
  }
  return out;
}

Json placeJson(int place) {
  return place == kHost ? Json("host") : Json(place);
}

} // namespace

Json operationsToJson(const graph::ExpandedGraph& g, const ShardPlan& p) {
  Json out = Json::object();
  for (const OpPlan& opPlan : p.ops) {
    const graph::Operation& op = g.operations[opPlan.op];
    Json entry = Json::object();
    append(entry, "split", opPlan.choice.split);
    append(entry, "devices", opPlan.choice.devices);
    Json shards = Json::array();
    for (const Shard& s : opPlan.shards) {
      Json shard = Json::object();
      append(shard, "index", toJson(s.index));
      append(shard, "device", s.device);
      Json selections = Json::object();
      append(selections, "inputs", selectionsJson(g, op.inputs, s.inputs));
      append(selections, "outputs", selectionsJson(g, op.outputs, s.outputs));
      append(shard, "selections", std::move(selections));
      shards.push_back(std::move(shard));
    }
    append(entry, "shards", std::move(shards));
    append(out, op.name, std::move(entry));
  }
  return out;
}

Json reductionsToJson(const graph::ExpandedGraph& g, const ShardPlan& p) {
  return json::arrayOf(p.reductions, [&](const Reduction& r) {
    Json item = Json::object();
    append(item, "op", g.operations[r.op].name);
    append(item, "tensor", g.tensors[r.tensor].name);
    append(item, "region", toJson(r.region));
    append(item, "bytes", r.bytes);
    append(item, "combine", r.combine);
    append(item, "device", r.device);
    append(item, "shards", r.shards);
    Json steps = Json::array();
    for (const Reduction::Step& s : r.steps) {
      Json step = Json::object();
      append(step, "from", r.shards[s.from]);
      append(step, "into", r.shards[s.into]);
      if (s.transfer) {
        append(step, "transfer", *s.transfer);
      }
      steps.push_back(std::move(step));
    }
    append(item, "steps", std::move(steps));
    return item;
  });
}

Json transfersToJson(const graph::ExpandedGraph& g, const ShardPlan& p) {
  return json::arrayOf(p.transfers, [&](const Transfer& t) {
    Json item = Json::object();
    append(item, "tensor", g.tensors[t.tensor].name);
    append(item, "region", toJson(t.region));
    append(item, "bytes", t.bytes);
    append(item, "from", placeJson(t.from));
    append(item, "to", t.to);
    if (t.afterShard) {
      Json after = Json::object();
      append(after, "op", g.operations[t.afterShard->first].name);
      append(after, "shard", t.afterShard->second);
      append(item, "after", std::move(after));
    } else if (t.afterReduction) {
      Json after = Json::object();
      append(after, "reduction", *t.afterReduction);
      append(item, "after", std::move(after));
    } else if (t.afterTransfer) {
      Json after = Json::object();
      append(after, "transfer", *t.afterTransfer);
      append(item, "after", std::move(after));
    }
    if (t.reduction) {
      append(item, "reduction", *t.reduction);
    }
    return item;
  });
}

} // namespace tapestry::plan
