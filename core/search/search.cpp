#include "core/search/search.hpp"

#include <algorithm>
#include <mutex>

#include "core/diag/error.hpp"
#include "core/search/island.hpp"
#include "core/search/mutate.hpp"
#include "core/search/parallel.hpp"

namespace tapestry::search {

ChoiceScorer::ChoiceScorer(const graph::ExpandedGraph& g, const cost::Target& target,
                           plan::PlanOptions options)
    : graph_(&g), target_(&target), options_(options), context_(g) {}

ChoiceScorer::~ChoiceScorer() = default;

std::optional<cost::Objectives> ChoiceScorer::evaluate(const plan::PlanChoice& choice) const {
  std::unique_ptr<cost::ChoiceSimulator> worker;
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!pool_.empty()) {
      worker = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!worker) {
    worker = std::make_unique<cost::ChoiceSimulator>(context_, *target_, options_);
  }
  std::optional<cost::Objectives> result;
  try {
    result = worker->evaluate(choice);
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
    result = std::nullopt; // not a valid plan
  }
  std::lock_guard<std::mutex> lock(poolMutex_);
  pool_.push_back(std::move(worker));
  return result;
}

std::vector<std::optional<cost::Objectives>>
evaluateAll(const ChoiceScorer& evaluator, const std::vector<plan::PlanChoice>& choices,
            int threads) {
  std::vector<std::optional<cost::Objectives>> results(choices.size());
  parallelFor(choices.size(), threads,
              [&](std::uint64_t i) { results[i] = evaluator.evaluate(choices[i]); });
  return results;
}

std::vector<BaselineResult> evaluateBaselines(const ChoiceScorer& evaluator,
                                              const SearchSpace& space, ParetoArchive* archive) {
  std::vector<BaselineResult> out;
  for (Baseline& b : makeBaselines(space, evaluator.context())) {
    BaselineResult r{std::move(b), std::nullopt};
    r.objectives = evaluator.evaluate(r.baseline.choice);
    if (archive && r.objectives) {
      archive->insert(Evaluated{r.baseline.choice, *r.objectives});
    }
    out.push_back(std::move(r));
  }
  return out;
}

SearchResult runSearch(const ChoiceScorer& evaluator, const SearchOptions& options) {
  // One island of the island model (island.cpp) is this search, draw for draw:
  // the generation loop lives there once.
  LocalIslands solo(1);
  const std::unique_ptr<IslandTransport> transport = solo.transport(0);
  return runIslandSearch(evaluator, options, IslandOptions{}, *transport);
}

} // namespace tapestry::search
