// The front/v1 file (SPEC §7, `optimize --front`): every plan of the front with
// its objectives and per-operation split and devices, the baselines' objectives
// for comparison, the index of the plan `--select` picked, and how the search ran.
//
//   {"tapestry": "front/v1", "graph": NAME, "target": NAME, "devices": D,
//    "front": [{"objectives": {"time_s", "peak_memory_bytes", "transfer_bytes",
//                              "feasible"},
//               "operations": {OP: {"split": [...], "devices": [...]}}}, ...],
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
#include <string>

#include "core/cost/target.hpp"
#include "core/graph/graph.hpp"
#include "core/json/json.hpp"
#include "core/search/search.hpp"
#include "core/search/select.hpp"

namespace tapestry::search {

struct FrontInfo {
  std::size_t selected = 0;
  SelectPolicy policy = SelectPolicy::Fastest;
  bool exhaustive = false;
  std::uint64_t seed = 0;
  int threads = 1;
  int ranks = 1;                  // islands under mpirun; 1: the plain search
  std::int64_t exchangeEvery = 0; // with ranks > 1
};

// {OP: {"split", "devices"}} in graph file order.
Json choiceToJson(const graph::ExpandedGraph& g, const plan::PlanChoice& choice);
Json baselinesToJson(const std::vector<BaselineResult>& baselines);
// The "search" object (also the --format json summary's).
Json searchToJson(const SearchResult& result, const FrontInfo& info);
Json frontToJson(const graph::ExpandedGraph& g, const cost::Target& target,
                 const SearchResult& result, const FrontInfo& info);

} // namespace tapestry::search
