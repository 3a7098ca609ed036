#include "core/search/search.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "core/diag/error.hpp"
#include "core/search/mutate.hpp"

namespace tapestry::search {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Redraws per slot before giving up on finding a plan not evaluated yet.
constexpr int kDrawAttempts = 16;

} // namespace

Evaluator::Evaluator(const graph::ExpandedGraph& g, const cost::Target& target,
                     plan::PlanOptions options)
    : graph_(&g), target_(&target), options_(options), context_(g) {}

Evaluator::~Evaluator() = default;

std::optional<cost::Objectives> Evaluator::evaluate(const plan::PlanChoice& choice) const {
  std::unique_ptr<cost::Evaluator> worker;
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!pool_.empty()) {
      worker = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!worker) {
    worker = std::make_unique<cost::Evaluator>(context_, *target_, options_);
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
evaluateAll(const Evaluator& evaluator, const std::vector<plan::PlanChoice>& choices, int threads) {
  std::vector<std::optional<cost::Objectives>> results(choices.size());
  const std::size_t workers =
      std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), choices.size());
  if (workers <= 1) {
    for (std::size_t i = 0; i < choices.size(); ++i) {
      results[i] = evaluator.evaluate(choices[i]);
    }
    return results;
  }
  // Work stealing by an atomic counter; each result goes to its own slot, and
  // the first exception (a bug) is rethrown once every worker has stopped.
  std::atomic<std::size_t> nextIndex{0};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto work = [&] {
    for (;;) {
      const std::size_t i = nextIndex.fetch_add(1, std::memory_order_relaxed);
      if (i >= choices.size()) {
        return;
      }
      try {
        results[i] = evaluator.evaluate(choices[i]);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failure) {
          failure = std::current_exception();
        }
        nextIndex.store(choices.size());
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) {
    pool.emplace_back(work);
  }
  work();
  for (std::thread& t : pool) {
    t.join();
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
  return results;
}

std::vector<BaselineResult> evaluateBaselines(const Evaluator& evaluator, const SearchSpace& space,
                                              ParetoArchive* archive) {
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

SearchResult runSearch(const Evaluator& evaluator, const SearchOptions& options) {
  const Clock::time_point start = Clock::now();
  const SearchSpace space(evaluator.graph(), evaluator.deviceCount());
  SearchResult result;
  ParetoArchive archive(options.archiveCap);
  std::unordered_set<std::uint64_t> seen;

  result.baselines = evaluateBaselines(evaluator, space, &archive);
  for (const BaselineResult& b : result.baselines) {
    seen.insert(hashChoice(b.baseline.choice));
    ++result.evaluations;
    result.invalid += b.objectives ? 0 : 1;
  }
  // Until a feasible plan is found (every baseline over memory), parents come
  // from the valid plans with the least peak memory, which leads toward ones
  // that fit.
  std::vector<Evaluated> lowMemory;
  auto keepLowMemory = [&lowMemory](const plan::PlanChoice& choice, const cost::Objectives& o) {
    lowMemory.push_back(Evaluated{choice, o});
    std::stable_sort(lowMemory.begin(), lowMemory.end(),
                     [](const Evaluated& a, const Evaluated& b) {
                       return a.objectives.peakMemoryBytes < b.objectives.peakMemoryBytes;
                     });
    if (lowMemory.size() > kDefaultArchiveCap) {
      lowMemory.pop_back();
    }
  };
  for (const BaselineResult& b : result.baselines) {
    if (b.objectives && !b.objectives->feasible) {
      keepLowMemory(b.baseline.choice, *b.objectives);
    }
  }
  if (lowMemory.empty()) {
    lowMemory.push_back(Evaluated{result.baselines.front().baseline.choice, {}});
  }

  const bool timed = options.budgetSeconds > 0;
  const std::int64_t generations =
      options.generations > 0 ? options.generations : (timed ? 0 : kDefaultGenerations);
  const std::size_t batch = std::max<std::size_t>(options.batch, 1);

  std::int64_t generation = 0;
  for (;;) {
    if (generations > 0 && generation >= generations) {
      break;
    }
    if (timed && since(start) >= options.budgetSeconds) {
      break;
    }
    if (options.stop && options.stop->load()) {
      result.stopped = true;
      break;
    }
    // Draw the batch (sequential: cheap next to evaluation, and it keeps the
    // seen-set checks in slot order).
    const std::vector<Evaluated>& members = archive.members();
    std::vector<plan::PlanChoice> candidates;
    candidates.reserve(batch);
    for (std::size_t slot = 0; slot < batch; ++slot) {
      Rng rng = Rng::forSlot(options.seed, static_cast<std::uint64_t>(generation), slot);
      for (int attempt = 0; attempt < kDrawAttempts; ++attempt) {
        auto parent = [&]() -> const plan::PlanChoice& {
          const std::vector<Evaluated>& pool = members.empty() ? lowMemory : members;
          return pool[rng.below(pool.size())].choice;
        };
        plan::PlanChoice child = parent();
        if (rng.chance(0.2)) {
          child = crossover(space, child, parent(), rng);
        }
        mutate(space, child, rng);
        if (seen.insert(hashChoice(child)).second) {
          candidates.push_back(std::move(child));
          break;
        }
      }
    }
    if (candidates.empty()) {
      result.exhausted = true;
      break;
    }
    std::vector<std::optional<cost::Objectives>> scores =
        evaluateAll(evaluator, candidates, options.threads);
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      ++result.evaluations;
      if (!scores[i]) {
        ++result.invalid;
        continue;
      }
      if (!scores[i]->feasible && archive.empty()) {
        keepLowMemory(candidates[i], *scores[i]);
      }
      archive.insert(Evaluated{std::move(candidates[i]), *scores[i]});
    }
    ++generation;
    if (options.onGeneration) {
      SearchProgress p;
      p.generation = generation;
      p.evaluations = result.evaluations;
      p.seconds = since(start);
      p.fractionDone = generations > 0
                           ? static_cast<double>(generation) / static_cast<double>(generations)
                           : std::min(1.0, p.seconds / options.budgetSeconds);
      p.archive = &archive;
      options.onGeneration(p);
    }
  }
  result.iterations = generation;
  result.front = archive.sorted();
  if (result.front.empty() && lowMemory.front().objectives.peakMemoryBytes > 0) {
    result.leastPeakMemory = lowMemory.front().objectives.peakMemoryBytes;
  }
  result.seconds = since(start);
  return result;
}

} // namespace tapestry::search
