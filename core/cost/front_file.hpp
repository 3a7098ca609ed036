// The front/v1 file (`optimize --front`): one codec for both sides. The search
// (core/search/front_file.cpp) fills a FrontDocument and writes it;
// `render` (core/render/front_view.cpp) reads one back to draw it.
//
//   {"tapestry": "front/v1", "graph": NAME, "target": NAME, "devices": D,
//    "front": [{"objectives": {"time_s", "peak_memory_bytes", "transfer_bytes",
//                              "feasible"},
//               ["rewrites": [SITE INDEX, ...],]
//               "operations": {OP: {"split": [...], "devices": [...]}}}, ...],
//    ["rewrites": [{"rule", "replaced", "added"}, ...],]  (rewrite rules applied)
//    "baselines": {"single": {objectives}, "data_parallel": {...},
//                  "tensor_parallel": {...}},           (null: not a valid plan)
//    "selected": INDEX, "select": POLICY,
//    "search": {"method": "stochastic"|"exhaustive", "seed", "iterations",
//               "evaluations", "invalid", "threads", "seconds"
//               [, "ranks", "exchange_every"]}}      (island search under mpirun)
//
// Front plans are sorted by time, then memory, then bytes moved; operations are
// in graph file order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cost/simulator.hpp"
#include "core/json/json.hpp"

namespace tapestry::cost {

struct FrontOperation {
  std::string name;
  Json split;   // parts per index dim, as written
  Json devices; // one device per shard, as written
};

struct FrontPlan {
  Objectives objectives;
  std::vector<FrontOperation> operations; // graph file order
  std::vector<std::size_t> rewrites;      // the sites it rewrote (FrontDocument::rewrites)
  // Where the target forwards graph inputs between devices: whether this plan
  // does (plan::PlanChoice::relay); nullopt elsewhere.
  std::optional<bool> relay;
};

struct FrontBaseline {
  std::string name;
  std::optional<Objectives> objectives; // nullopt: not a valid plan on the target
};

struct FrontDocument {
  std::string graph;
  std::string target;
  std::optional<std::int64_t> devices;
  std::vector<FrontPlan> plans;
  // The rewrite sites found (empty: no rule changed the graph), each
  // {"rule", "replaced", "added"}; plans name the ones they rewrote.
  Json rewrites = Json::array();
  std::vector<FrontBaseline> baselines;
  std::optional<std::size_t> selected;
  std::string select;
  Json search = Json::object(); // how the search ran (searchToJson in core/search)
};

// The objectives of one plan as every file writes them: {"time_s",
// "peak_memory_bytes", "transfer_bytes", "feasible"}.
Json objectivesToJson(const Objectives& objectives);

// The whole front/v1 document.
Json frontToJson(const FrontDocument& front);

// Reads a front/v1 document for drawing. The objectives must be finite
// numbers >= 0 and `selected` a plan of the front (a located Error, exit 1);
// other fields are taken as far as they are there and of the right type.
FrontDocument decodeFront(const json::Value& root);

} // namespace tapestry::cost
