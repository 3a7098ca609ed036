// The stochastic multi-objective search of `optimize` (SPEC §7, docs/search.md).
//
// Generational: generation g draws a batch of candidates, slot by slot, each
// from a random archive member (sometimes crossed with another) through a few
// random moves, with the generator Rng::forSlot(seed, g, slot); candidates
// evaluated before are redrawn. The batch is evaluated in parallel (buildPlan +
// simulate, one candidate per task) and merged into the archive in slot order.
// So the result depends on the seed and the number of generations only, never
// on the thread count; a time budget only decides when to stop, at a
// generation boundary.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/graph/graph.hpp"
#include "core/plan/plan.hpp"
#include "core/search/archive.hpp"
#include "core/search/baselines.hpp"
#include "core/search/mutate.hpp"
#include "core/search/space.hpp"

namespace tapestry::search {

// Scores choices for one graph (or for the variants of one, GraphVariants),
// target and options: the objectives of simulate(buildPlan(choice)), through
// the cost model's allocation-free fast path (cost::ChoiceSimulator), on the
// graph of the choice's variant. Thread-safe: each call borrows one of a pool
// of cost::Evaluators (one per concurrent caller, kept warm between calls).
class ChoiceScorer {
public:
  ChoiceScorer(const graph::ExpandedGraph& g, const cost::Target& target,
               plan::PlanOptions options = {});
  ChoiceScorer(GraphVariants variants, const cost::Target& target, plan::PlanOptions options = {});
  ~ChoiceScorer();

  // nullopt when the choice is no valid plan (checkChoice or buildPlan reject
  // it); infeasible objectives when it does not fit in memory.
  std::optional<cost::Objectives> evaluate(const plan::PlanChoice& choice) const;

  // Variant 0's graph and context unless told which.
  const graph::ExpandedGraph& graph(std::uint32_t variant = 0) const {
    return *variants_.graphs.at(variant);
  }
  const plan::PlanContext& context(std::uint32_t variant = 0) const {
    return slots_.at(variant)->context;
  }
  std::uint32_t variantCount() const { return static_cast<std::uint32_t>(slots_.size()); }
  const GraphVariants& variants() const { return variants_; }
  const cost::Target& target() const { return *target_; }
  const plan::PlanOptions& options() const { return options_; }
  int deviceCount() const { return target_->deviceCount(); }

private:
  struct Slot {
    explicit Slot(const graph::ExpandedGraph& g) : context(g) {}
    plan::PlanContext context;
    std::vector<std::unique_ptr<cost::ChoiceSimulator>> pool; // idle evaluators
  };
  GraphVariants variants_;
  const cost::Target* target_;
  plan::PlanOptions options_;
  std::vector<std::unique_ptr<Slot>> slots_; // per variant
  mutable std::mutex poolMutex_;
};

// Whether the scorer's plans may forward graph inputs between devices (its
// options have relay groups): then plan::PlanChoice::relay is a choice too.
inline bool relays(const ChoiceScorer& evaluator) {
  return !evaluator.options().relayGroups.empty();
}

// One search space per variant of the scorer's graph.
std::vector<SearchSpace> searchSpaces(const ChoiceScorer& evaluator);

// Evaluates `choices` on `threads` workers; results in input order.
std::vector<std::optional<cost::Objectives>>
evaluateAll(const ChoiceScorer& evaluator, const std::vector<plan::PlanChoice>& choices,
            int threads);

// When neither iterations nor a time budget is given.
inline constexpr std::int64_t kDefaultGenerations = 300;
inline constexpr std::size_t kDefaultBatch = 64;
inline constexpr std::size_t kDefaultArchiveCap = 64;

// What the search reports after every generation (progress lines, benchmarks).
struct SearchProgress {
  std::int64_t generation = 0; // generations done
  std::int64_t evaluations = 0;
  double seconds = 0;
  double fractionDone = 0; // of the iteration or time budget
  const ParetoArchive* archive = nullptr;
};

struct SearchOptions {
  std::uint64_t seed = 0;
  std::int64_t generations = 0; // 0: kDefaultGenerations unless budgetSeconds is set
  double budgetSeconds = 0;     // > 0: stop at the first generation boundary past it
  int threads = 1;
  std::size_t batch = kDefaultBatch;
  std::size_t archiveCap = kDefaultArchiveCap;
  // Set from elsewhere (e.g. a SIGINT handler) to stop at the next boundary.
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const SearchProgress&)> onGeneration;
};

struct BaselineResult {
  Baseline baseline;
  std::optional<cost::Objectives> objectives; // nullopt: not a valid plan
};

struct SearchResult {
  std::vector<Evaluated> front; // sorted by time, then memory, then transfer
  std::vector<BaselineResult> baselines;
  std::int64_t iterations = 0;  // generations (exhaustive: 1)
  std::int64_t evaluations = 0; // plans built and simulated, baselines included
  std::int64_t invalid = 0;     // of those, not valid plans
  double seconds = 0;
  bool stopped = false;   // ended by the stop flag
  bool exhausted = false; // no unseen candidate could be drawn: the space is used up
  // When nothing fits in memory (an empty front): the least peak memory of any
  // valid plan evaluated (0 when unknown).
  std::int64_t leastPeakMemory = 0;
};

// Evaluates the baselines of one variant (`space` is its space), also seeding
// an archive with them when given.
std::vector<BaselineResult> evaluateBaselines(const ChoiceScorer& evaluator,
                                              const SearchSpace& space, ParetoArchive* archive,
                                              std::uint32_t variant = 0);

SearchResult runSearch(const ChoiceScorer& evaluator, const SearchOptions& options);

// ---------------------------------------------------------------- the loop

// What the generation loop keeps between generations; hooks read and change it.
struct SearchState {
  using Clock = std::chrono::steady_clock;

  explicit SearchState(const std::vector<SearchSpace>& s, std::size_t archiveCap)
      : spaces(s), archive(archiveCap) {}
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start).count(); }

  const std::vector<SearchSpace>& spaces; // per graph variant
  SearchResult result;
  ParetoArchive archive;
  std::unordered_set<std::uint64_t> seen; // plans evaluated (hashChoice)
  // While nothing fits: the plans of least peak memory, parents instead of
  // the (empty) archive.
  std::vector<Evaluated> lowMemory;
  std::int64_t generation = 0;  // generations done
  std::int64_t generations = 0; // to run; 0: until the time budget
  std::size_t batch = 0;        // candidates per generation
  bool timed = false;           // a time budget, not a generation count
  std::size_t polishCursor = 0; // the next (op, neighbour) pair a polish tries
  Clock::time_point start = Clock::now();
};

// Where the island model (island.hpp) joins the generation loop; the plain
// search is the defaults: one process, its own stopping, no exchanges.
class SearchHooks {
public:
  virtual ~SearchHooks() = default;
  // One process: stop at the budget or the stop flag, and as soon as no unseen
  // candidate can be drawn. Islands stop where they agree to, at exchanges.
  virtual bool alone() const { return true; }
  virtual std::uint64_t seed(std::uint64_t base) const { return base; }
  virtual std::size_t batch(std::size_t whole) const { return whole; }
  // Before a generation's draws.
  virtual void beginGeneration(const SearchState& state) { (void)state; }
  // A parent other than the usual draw from the archive, or null (drawing from
  // `rng` only when it gives one).
  virtual const plan::PlanChoice* homeParent(const SearchState& state, Rng& rng) {
    (void)state;
    (void)rng;
    return nullptr;
  }
  // A candidate drawn (its hash), and a generation's candidates evaluated.
  virtual void drew(std::uint64_t hash) { (void)hash; }
  virtual void evaluated(const std::vector<plan::PlanChoice>& candidates) { (void)candidates; }
  // No unseen candidate could be drawn (not alone): where to go on.
  virtual void exhausted(SearchState& state) { (void)state; }
  // After each generation; true stops the loop.
  virtual bool afterGeneration(SearchState& state) {
    (void)state;
    return false;
  }
  // Progress: whether this process reports it, and its evaluations' share.
  virtual bool reportsProgress() const { return true; }
  virtual std::int64_t progressScale() const { return 1; }
  // The result once the loop ends (front, memory, time).
  virtual SearchResult finish(SearchState& state);
};

// The generation loop: baselines, then generations of candidates drawn from
// the archive (mutations and crossovers of unseen plans), evaluated and kept
// when not dominated, until the budget, the stop flag or exhaustion.
// The polish that starts every fourth generation: appends to `candidates`,
// up to `state.batch`, unseen children of the archive's fastest plan that
// differ from it in one op, which copies one neighbour's split and placement;
// the (op, neighbour) pairs in turn from `state.polishCursor`, which it
// advances. Marks them seen (and tells `hooks`). Nothing with an empty archive.
void polishCandidates(SearchState& state, SearchHooks& hooks,
                      std::vector<plan::PlanChoice>& candidates);

SearchResult runGenerations(const ChoiceScorer& evaluator, const SearchOptions& options,
                            SearchHooks& hooks);

} // namespace tapestry::search
