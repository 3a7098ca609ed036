#include "core/search/front_file.hpp"

#include "core/cost/plan_file.hpp"

namespace tapestry::search {

Json choiceToJson(const graph::ExpandedGraph& g, const plan::PlanChoice& choice) {
  Json out = Json::object();
  for (std::size_t i = 0; i < g.operations.size(); ++i) {
    Json op = Json::object();
    op["split"] = choice.ops[i].split;
    op["devices"] = choice.ops[i].devices;
    out[g.operations[i].name] = std::move(op);
  }
  return out;
}

Json baselinesToJson(const std::vector<BaselineResult>& baselines) {
  Json out = Json::object();
  for (const BaselineResult& b : baselines) {
    out[b.baseline.name] = b.objectives ? plan::objectivesToJson(*b.objectives) : Json(nullptr);
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
  Json out = Json::object();
  out["tapestry"] = "front/v1";
  out["graph"] = g.name;
  out["target"] = target.name;
  out["devices"] = target.deviceCount();
  Json front = Json::array();
  for (const Evaluated& e : result.front) {
    Json item = Json::object();
    item["objectives"] = plan::objectivesToJson(e.objectives);
    item["operations"] = choiceToJson(g, e.choice);
    front.push_back(std::move(item));
  }
  out["front"] = std::move(front);
  out["baselines"] = baselinesToJson(result.baselines);
  out["selected"] = info.selected;
  out["select"] = selectPolicyName(info.policy);
  out["search"] = searchToJson(result, info);
  return out;
}

} // namespace tapestry::search
