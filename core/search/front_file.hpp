// Writing the front/v1 file (`optimize --front`) from a search's result, through
// the one codec of the format (core/cost/front_file.hpp, which documents it);
// the optimize summary shares the baselines' and the search's JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/front_file.hpp"
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
  // The sites rewritten in any graph searched ([{"rule", "replaced",
  // "added"}]), and per graph variant the indices of its sites (empty: every
  // plan has all of them).
  Json rewrites = Json::array();
  std::vector<std::vector<std::size_t>> variantSites;
  // Per graph variant, its graph (empty: every plan is of frontToJson's graph).
  std::vector<const graph::ExpandedGraph*> graphs;
  // Whether the target forwards inputs (relay groups): each plan then says
  // whether it does.
  bool relays = false;
};

// A choice as the front file's operations, in graph file order.
std::vector<cost::FrontOperation> frontOperations(const graph::ExpandedGraph& g,
                                                  const plan::PlanChoice& choice);
Json baselinesToJson(const std::vector<BaselineResult>& baselines);
// The "search" object (also the --format json summary's).
Json searchToJson(const SearchResult& result, const FrontInfo& info);
Json frontToJson(const graph::ExpandedGraph& g, const cost::Target& target,
                 const SearchResult& result, const FrontInfo& info);

} // namespace tapestry::search
