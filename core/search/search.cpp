#include "core/search/search.hpp"

#include <algorithm>
#include <mutex>

#include "core/diag/error.hpp"
#include "core/search/island.hpp"
#include "core/search/mutate.hpp"
#include "core/search/parallel.hpp"

namespace tapestry::search {

namespace {

GraphVariants oneGraph(const graph::ExpandedGraph& g) {
  GraphVariants v;
  v.graphs = {&g};
  v.masks = {0};
  v.from = {{{}}};
  return v;
}

} // namespace

ChoiceScorer::ChoiceScorer(const graph::ExpandedGraph& g, const cost::Target& target,
                           plan::PlanOptions options)
    : ChoiceScorer(oneGraph(g), target, options) {}

ChoiceScorer::ChoiceScorer(GraphVariants variants, const cost::Target& target,
                           plan::PlanOptions options)
    : variants_(std::move(variants)), target_(&target), options_(options) {
  const std::size_t n = variants_.graphs.size();
  checkInvariant(n >= 1 && variants_.masks.size() == n && variants_.from.size() == n &&
                     variants_.reported < n,
                 "ChoiceScorer: graph variants of inconsistent sizes");
  for (const graph::ExpandedGraph* g : variants_.graphs) {
    slots_.push_back(std::make_unique<Slot>(*g));
  }
}

ChoiceScorer::~ChoiceScorer() = default;

std::optional<cost::Objectives> ChoiceScorer::evaluate(const plan::PlanChoice& choice) const {
  checkInvariant(choice.variant < slots_.size(), "a plan choice of an unknown graph variant");
  Slot& slot = *slots_[choice.variant];
  std::unique_ptr<cost::ChoiceSimulator> worker;
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (!slot.pool.empty()) {
      worker = std::move(slot.pool.back());
      slot.pool.pop_back();
    }
  }
  if (!worker) {
    worker = std::make_unique<cost::ChoiceSimulator>(slot.context, *target_, options_);
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
  slot.pool.push_back(std::move(worker));
  return result;
}

std::vector<SearchSpace> searchSpaces(const ChoiceScorer& evaluator) {
  std::vector<SearchSpace> spaces;
  spaces.reserve(evaluator.variantCount());
  for (std::uint32_t v = 0; v < evaluator.variantCount(); ++v) {
    spaces.emplace_back(evaluator.graph(v), evaluator.deviceCount());
  }
  return spaces;
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
                                              const SearchSpace& space, ParetoArchive* archive,
                                              std::uint32_t variant) {
  std::vector<BaselineResult> out;
  for (Baseline& b : makeBaselines(space, evaluator.context(variant))) {
    b.choice.variant = variant;
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
  SearchHooks plain;
  return runGenerations(evaluator, options, plain);
}

// ---------------------------------------------------------------- the loop

namespace {

// Redraws per slot before giving up on an unseen plan, and the most plan
// hashes remembered (about 40 bytes each in the set: 4M is ~160 MiB); then the
// set starts over, so a long search's memory stays bounded (a repeat costs one
// evaluation; the point of the reset, and so the result, is deterministic).
constexpr int kDrawAttempts = 16;
constexpr std::size_t kMaxSeen = std::size_t{1} << 22;
// How often a child of a search over graph variants moves to another variant.
constexpr double kToggleChance = 0.1;
// How often a child flips whether its plan forwards graph inputs between the
// devices of a relay group (plan::PlanChoice::relay), where the target has
// such groups.
constexpr double kRelayToggleChance = 0.05;

void keepLowMemory(SearchState& state, const plan::PlanChoice& choice, const cost::Objectives& o) {
  std::vector<Evaluated>& lowMemory = state.lowMemory;
  lowMemory.push_back(Evaluated{choice, o});
  std::stable_sort(lowMemory.begin(), lowMemory.end(), [](const Evaluated& a, const Evaluated& b) {
    return a.objectives.peakMemoryBytes < b.objectives.peakMemoryBytes;
  });
  if (lowMemory.size() > kDefaultArchiveCap) {
    lowMemory.pop_back();
  }
}

// The baselines, evaluated and seeding the archive (and the low-memory
// parents when none fits). With graph variants, the reported baselines are
// those of the variant with every rule applied; variant 0's (none applied)
// seed the archive too.
void startFromBaselines(const ChoiceScorer& evaluator, SearchState& state) {
  const std::uint32_t reported = evaluator.variants().reported;
  std::vector<BaselineResult> all =
      evaluateBaselines(evaluator, state.spaces[reported], &state.archive, reported);
  state.result.baselines = all;
  if (reported != 0) {
    for (BaselineResult& b : evaluateBaselines(evaluator, state.spaces[0], &state.archive, 0)) {
      all.push_back(std::move(b));
    }
  }
  // Where the target forwards inputs, each baseline without forwarding
  // seeds the archive too (not reported: the baselines reported forward).
  const std::size_t forwarding = all.size();
  if (relays(evaluator)) {
    for (std::size_t i = 0; i < forwarding; ++i) {
      BaselineResult b{all[i].baseline, std::nullopt};
      b.baseline.choice.relay = false;
      b.objectives = evaluator.evaluate(b.baseline.choice);
      if (b.objectives) {
        state.archive.insert(Evaluated{b.baseline.choice, *b.objectives});
      }
      all.push_back(std::move(b));
    }
  }
  for (const BaselineResult& b : all) {
    state.seen.insert(hashChoice(b.baseline.choice));
    ++state.result.evaluations;
    state.result.invalid += b.objectives ? 0 : 1;
  }
  for (const BaselineResult& b : all) {
    if (b.objectives && !b.objectives->feasible) {
      keepLowMemory(state, b.baseline.choice, *b.objectives);
    }
  }
  if (state.lowMemory.empty()) {
    state.lowMemory.push_back(Evaluated{state.result.baselines.front().baseline.choice, {}});
  }
}

// Every kPolishEvery-th generation starts with a polish of the fastest plan
// on the front: children that differ from it in one op, which copies one
// neighbour's split and placement, taken in turn over every (op, neighbour)
// pair from where the last polish stopped; random draws fill the rest of the
// batch. Random moves rarely hit the one op whose misaligned split costs a
// transfer; the polish tries each in turn (on ResNet-50 b32 for h100x8, the
// fastest plan of a default search 6-18% faster; docs/search.md).
constexpr std::int64_t kPolishEvery = 4;

// Up to `state.batch` unseen children of archive members (or of the
// low-memory plans while the archive is empty), slot by slot from the seed.
std::vector<plan::PlanChoice> drawCandidates(const ChoiceScorer& evaluator, SearchState& state,
                                             SearchHooks& hooks, std::uint64_t seed) {
  const bool variants = state.spaces.size() > 1;
  const bool relaying = relays(evaluator);
  const std::vector<Evaluated>& members = state.archive.members();
  std::vector<plan::PlanChoice> candidates;
  candidates.reserve(state.batch);
  if (state.generation % kPolishEvery == kPolishEvery - 1) {
    polishCandidates(state, hooks, candidates);
  }
  // Assigned anew from a parent on each attempt, and kept until taken: a
  // redraw reuses its vectors' storage (as polishCandidates' child).
  plan::PlanChoice child;
  for (std::size_t slot = candidates.size(); slot < state.batch; ++slot) {
    Rng rng = Rng::forSlot(seed, static_cast<std::uint64_t>(state.generation), slot);
    for (int attempt = 0; attempt < kDrawAttempts; ++attempt) {
      auto parent = [&]() -> const plan::PlanChoice& {
        if (const plan::PlanChoice* home = hooks.homeParent(state, rng)) {
          return *home;
        }
        const std::vector<Evaluated>& pool = members.empty() ? state.lowMemory : members;
        return pool[rng.below(pool.size())].choice;
      };
      child = parent();
      // With graph variants, a child sometimes moves to another variant, and
      // crosses only with a parent of its own variant. (One graph draws
      // nothing for this, so its searches stay as they were.)
      if (variants && rng.chance(kToggleChance)) {
        toggleVariant(state.spaces, evaluator.variants(), child, rng);
      } else if (rng.chance(0.2)) {
        const plan::PlanChoice& other = parent();
        if (other.variant == child.variant) {
          child = crossover(state.spaces[child.variant], child, other, rng);
        }
      }
      // Where the target has relay groups, a child sometimes flips whether it
      // forwards inputs (a target without draws nothing for this).
      if (relaying && rng.chance(kRelayToggleChance)) {
        child.relay = !child.relay;
      }
      mutate(state.spaces[child.variant], child, rng);
      if (state.seen.size() >= kMaxSeen) {
        state.seen.clear();
      }
      const std::uint64_t hash = hashChoice(child);
      if (state.seen.insert(hash).second) {
        hooks.drew(hash);
        candidates.push_back(std::move(child));
        break;
      }
    }
  }
  return candidates;
}

// Scores the candidates and keeps the ones the archive keeps.
void evaluateCandidates(const ChoiceScorer& evaluator, const SearchOptions& options,
                        SearchState& state, std::vector<plan::PlanChoice>& candidates) {
  std::vector<std::optional<cost::Objectives>> scores =
      evaluateAll(evaluator, candidates, options.threads);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    ++state.result.evaluations;
    if (!scores[i]) {
      ++state.result.invalid;
      continue;
    }
    if (!scores[i]->feasible && state.archive.empty()) {
      keepLowMemory(state, candidates[i], *scores[i]);
    }
    state.archive.insert(Evaluated{std::move(candidates[i]), *scores[i]});
  }
}

void reportProgress(const SearchOptions& options, const SearchState& state,
                    const SearchHooks& hooks) {
  SearchProgress p;
  p.generation = state.generation;
  p.evaluations = state.result.evaluations * hooks.progressScale();
  p.seconds = state.elapsed();
  p.fractionDone = state.generations > 0 ? static_cast<double>(state.generation) /
                                               static_cast<double>(state.generations)
                                         : std::min(1.0, p.seconds / options.budgetSeconds);
  p.archive = &state.archive;
  options.onGeneration(p);
}

} // namespace

void polishCandidates(SearchState& state, SearchHooks& hooks,
                      std::vector<plan::PlanChoice>& candidates) {
  const std::vector<Evaluated>& members = state.archive.members();
  const Evaluated* best = nullptr;
  for (const Evaluated& m : members) {
    if (best == nullptr || m.objectives.timeS < best->objectives.timeS) {
      best = &m;
    }
  }
  if (best == nullptr) {
    return;
  }
  const SearchSpace& space = state.spaces[best->choice.variant];
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < space.opCount(); ++i) {
    for (std::size_t k = 0; k < space.neighbours(i).size(); ++k) {
      pairs.emplace_back(i, k);
    }
  }
  if (pairs.empty()) {
    return;
  }
  std::size_t step = 0;
  // One child, assigned anew from the best plan for each pair: its vectors keep
  // their storage until it is taken, so a pair that changes nothing or gives a
  // plan already seen costs no allocation.
  plan::PlanChoice child;
  for (; step < pairs.size() && candidates.size() < state.batch; ++step) {
    const auto [i, k] = pairs[(state.polishCursor + step) % pairs.size()];
    child = best->choice;
    if (!copyNeighbour(space, child, i, space.neighbours(i)[k])) {
      continue;
    }
    const std::uint64_t hash = hashChoice(child);
    if (state.seen.insert(hash).second) {
      hooks.drew(hash);
      candidates.push_back(std::move(child));
    }
  }
  state.polishCursor = (state.polishCursor + step) % pairs.size();
}

SearchResult SearchHooks::finish(SearchState& state) {
  SearchResult& result = state.result;
  result.front = state.archive.sorted();
  if (result.front.empty() && state.lowMemory.front().objectives.peakMemoryBytes > 0) {
    result.leastPeakMemory = state.lowMemory.front().objectives.peakMemoryBytes;
  }
  result.seconds = state.elapsed();
  return result;
}

SearchResult runGenerations(const ChoiceScorer& evaluator, const SearchOptions& options,
                            SearchHooks& hooks) {
  const std::vector<SearchSpace> spaces = searchSpaces(evaluator);
  SearchState state(spaces, options.archiveCap);
  const std::uint64_t seed = hooks.seed(options.seed);
  state.batch = hooks.batch(std::max<std::size_t>(options.batch, 1));
  state.timed = options.budgetSeconds > 0;
  state.generations =
      options.generations > 0 ? options.generations : (state.timed ? 0 : kDefaultGenerations);
  startFromBaselines(evaluator, state);

  for (;;) {
    if (state.generations > 0 && state.generation >= state.generations) {
      break;
    }
    if (hooks.alone()) {
      // Nothing to agree with: stop at the budget or when asked.
      if (state.timed && state.elapsed() >= options.budgetSeconds) {
        break;
      }
      if (options.stop && options.stop->load()) {
        state.result.stopped = true;
        break;
      }
    }
    hooks.beginGeneration(state);
    std::vector<plan::PlanChoice> candidates;
    if (!state.result.exhausted) {
      candidates = drawCandidates(evaluator, state, hooks, seed);
    }
    if (candidates.empty()) {
      state.result.exhausted = true;
      if (hooks.alone()) {
        break;
      }
      hooks.exhausted(state);
    } else {
      hooks.evaluated(candidates);
      evaluateCandidates(evaluator, options, state, candidates);
      ++state.generation;
    }
    if (hooks.reportsProgress() && options.onGeneration) {
      reportProgress(options, state, hooks);
    }
    if (hooks.afterGeneration(state)) {
      break;
    }
  }
  state.result.iterations = state.generation;
  return hooks.finish(state);
}

} // namespace tapestry::search
