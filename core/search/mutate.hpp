// Random moves through the search space (SPEC §7): change one operation's split
// along one dim, move its shards to other devices, or copy a neighbour's split
// and placement (so the tensor between them needs no resharding), alone or
// spread over a connected region of the graph. Every move keeps the choice a
// member of the SearchSpace. Randomness comes from a small, fully specified
// generator so that a seed gives the same plans on every platform.
#pragma once

#include <cstdint>
#include <vector>

#include "core/plan/plan.hpp"
#include "core/search/space.hpp"

namespace tapestry::search {

// xoshiro256** seeded through splitmix64: portable and fast. (The standard
// distributions are implementation-defined, so they are not used.)
class Rng {
public:
  explicit Rng(std::uint64_t seed);
  // The generator of one candidate: a function of the run's seed, the
  // generation and the slot only (not of threads or timing).
  static Rng forSlot(std::uint64_t seed, std::uint64_t generation, std::uint64_t slot);

  std::uint64_t next();
  // Uniform in [0, n), n >= 1 (rejection sampling).
  std::uint64_t below(std::uint64_t n);
  // Uniform in [lo, hi].
  std::int64_t between(std::int64_t lo, std::int64_t hi);
  // Uniform in [0, 1).
  double unit();
  bool chance(double p) { return unit() < p; }

private:
  std::uint64_t s_[4];
};

enum class MoveKind { SplitDim, Placement, CopyNeighbour, SpreadRegion };

// Applies one random move of `kind` to `choice` (in place); returns false when
// the move had nothing to change (e.g. an op with no splittable dim).
bool applyMove(const SearchSpace& space, plan::PlanChoice& choice, MoveKind kind, Rng& rng);

// One to a few random moves (of random kinds); returns whether anything changed.
bool mutate(const SearchSpace& space, plan::PlanChoice& choice, Rng& rng);

// Moves `choice` to another graph variant (`spaces` holds one space per
// variant): one whose mask differs in one rule when there is one, else any
// other. Each op takes its GraphVariants::from op's split along their common
// leading dims, clamped to its own space, placed at that op's offset; an op
// with no such op, or whose clamped choice is not in its space, starts whole
// on device 0. Returns false with a single variant.
bool toggleVariant(const std::vector<SearchSpace>& spaces, const GraphVariants& variants,
                   plan::PlanChoice& choice, Rng& rng);

// Op `i` takes neighbour `n`'s split (along the dims that line up) and
// placement; false when that changes nothing.
bool copyNeighbour(const SearchSpace& space, plan::PlanChoice& choice, std::size_t i,
                   const Neighbour& n);

// Per operation, from `a` or from `b`: a contiguous run of operations (in
// topological order) comes from `b`, the rest from `a`.
plan::PlanChoice crossover(const SearchSpace& space, const plan::PlanChoice& a,
                           const plan::PlanChoice& b, Rng& rng);

// A 64-bit hash of a choice (split and offset of every op): the search's
// "already evaluated" set.
std::uint64_t hashChoice(const plan::PlanChoice& choice);

} // namespace tapestry::search
