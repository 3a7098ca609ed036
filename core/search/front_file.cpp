#include "core/search/front_file.hpp"

#include "core/cost/plan_file.hpp"

namespace tapestry::search {

std::vector<cost::FrontOperation> frontOperations(const graph::ExpandedGraph& g,
                                                  const plan::PlanChoice& choice) {
  std::vector<cost::FrontOperation> out;
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    out.push_back(cost::FrontOperation{g.operations[i].name, Json(choice.ops[i].split),
                                       Json(choice.ops[i].devices)});
  }
  return out;
}

Json baselinesToJson(const std::vector<BaselineResult>& baselines) {
  Json out = Json::object();
  for (const BaselineResult& b : baselines) {
    out[b.baseline.name] = b.objectives ? cost::objectivesToJson(*b.objectives) : Json(nullptr);
  }
  return out;
}

Json searchToJson(const SearchResult& result, const FrontInfo& info) {
  Json search = Json::object();
  search["method"] = info.exhaustive ? "exhaustive" : "stochastic";
  search["seed"] = info.seed;
  search["iterations"] = result.iterations;
  search["evaluations"] = result.evaluations;
  search["invalid"] = result.invalid;
  search["threads"] = info.threads;
  search["seconds"] = result.seconds;
  if (info.ranks > 1) {
    search["ranks"] = info.ranks;
    search["exchange_every"] = info.exchangeEvery;
  }
  return search;
}

Json frontToJson(const graph::ExpandedGraph& g, const cost::Target& target,
                 const SearchResult& result, const FrontInfo& info) {
  cost::FrontDocument front;
  front.graph = g.name;
  front.target = target.name;
  front.devices = target.deviceCount();
  front.rewrites = info.rewrites;
  std::vector<std::size_t> all(info.rewrites.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    all[i] = i;
  }
  for (const Evaluated& e : result.front) {
    const graph::ExpandedGraph& of =
        e.choice.variant < info.graphs.size() ? *info.graphs[e.choice.variant] : g;
    const std::vector<std::size_t>& sites =
        e.choice.variant < info.variantSites.size() ? info.variantSites[e.choice.variant] : all;
    front.plans.push_back(
        cost::FrontPlan{e.objectives, frontOperations(of, e.choice), sites,
                        info.relays ? std::optional(e.choice.relay) : std::nullopt});
  }
  for (const BaselineResult& b : result.baselines) {
    front.baselines.push_back(cost::FrontBaseline{b.baseline.name, b.objectives});
  }
  front.selected = info.selected;
  front.select = selectPolicyName(info.policy);
  front.search = searchToJson(result, info);
  return cost::frontToJson(front);
}

} // namespace tapestry::search
