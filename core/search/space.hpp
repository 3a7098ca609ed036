// The search space of `optimize` (docs/search.md): for every operation, a split
// of its index space and a placement of the shards, for D devices.
//
//   split      s = (s_0, ..., s_{r-1}), 1 <= s_d <= max(extent_d, 1), prod(s) <= D,
//              s_d = 1 on a reduction dim unless the op's reductionSplittable;
//   placement  an offset o in [0, D): shard j (row-major tile order) runs on
//              device (o + j) mod D, so the shards of one op use distinct devices.
//
// The stochastic search only ever proposes members of this space, and
// `--exhaustive` enumerates exactly it. Some members are still not valid plans
// (buildPlan rejects splits whose shards would write overlapping outputs); the
// search treats those as infeasible candidates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::search {

// How one operation's split may change.
struct OpSpace {
  std::vector<std::int64_t> extents; // the index extents
  std::vector<bool> splittable;      // per dim: may be cut (extent > 1, reduction rule)
  std::vector<std::size_t> dims;     // the splittable dims, ascending
  std::vector<bool> reduction;       // per dim: a reduction dim
};

// Two operations touching one tensor, and how their index dims line up through
// it: `pairs` holds (dim of `op`, dim of `neighbour`) for every tensor dim that
// both reach through the (major term of the) matching IPF row. Copying a
// neighbour's split along these dims partitions the shared tensor the same way
// on both sides, so no region has to move between them.
struct Neighbour {
  std::size_t op = 0;
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
};

class SearchSpace {
public:
  SearchSpace(const graph::ExpandedGraph& g, int deviceCount);

  const graph::ExpandedGraph& graph() const { return *graph_; }
  int deviceCount() const { return devices_; }
  std::size_t opCount() const { return ops_.size(); }
  const OpSpace& op(std::size_t i) const { return ops_[i]; }
  // Operations sharing a tensor with op i (producers, consumers, and readers of
  // the same tensor), each once, in operation order.
  const std::vector<Neighbour>& neighbours(std::size_t i) const { return neighbours_[i]; }
  // Operations with at least one splittable dim / at least one neighbour.
  const std::vector<std::size_t>& splittableOps() const { return splittableOps_; }
  const std::vector<std::size_t>& connectedOps() const { return connectedOps_; }

  // The devices of a split placed at `offset`: (offset + j) mod D.
  std::vector<int> placement(const std::vector<std::int64_t>& split, int offset) const;
  // An OpChoice of this space.
  plan::OpChoice opChoice(std::vector<std::int64_t> split, int offset) const;
  // True when `choice` is a member of the space (split bounds, product <= D,
  // reduction rule, devices an offset placement).
  bool contains(const plan::PlanChoice& choice) const;
  bool contains(std::size_t op, const plan::OpChoice& choice) const;

  // Every split of op i, in lexicographic order; stops (and returns nullopt)
  // once more than `limit` would be listed.
  std::optional<std::vector<std::vector<std::int64_t>>> splits(std::size_t i,
                                                               std::size_t limit) const;

  // `from`'s split translated onto op i through their alignment (dims that do
  // not line up stay whole), clamped to op i's extents and reduction rule.
  std::vector<std::int64_t> alignedSplit(std::size_t i, const Neighbour& from,
                                         const std::vector<std::int64_t>& fromSplit) const;

private:
  const graph::ExpandedGraph* graph_;
  int devices_;
  std::vector<OpSpace> ops_;
  std::vector<std::vector<Neighbour>> neighbours_;
  std::vector<std::size_t> splittableOps_;
  std::vector<std::size_t> connectedOps_;
};

// The graphs one search chooses among, when rewrite rules are choices of the
// search (docs/rewrites.md): variant v is the graph with the rules of
// masks[v] applied (bit r: rule r, or one group of a rule's sites). A plan
// (plan::PlanChoice::variant) is for one of them, and a move may carry it to another: op i of
// variant w then takes the choice of op from[w][v][i] of variant v (-1: none, it starts whole),
// clamped to its own space.
struct GraphVariants {
  std::vector<const graph::ExpandedGraph*> graphs;
  std::vector<std::uint32_t> masks;
  std::vector<std::vector<std::vector<std::int64_t>>> from;
  std::uint32_t reported = 0; // whose baselines a result reports (all rules applied)
  // The sets of mask bits one move flips together: one group of a rule's
  // sites (one bit), or a rule's bits, turned all on or all off. Empty: any
  // one bit.
  std::vector<std::uint32_t> steps;
};

// "[1, 4, 2]"
std::string formatSplit(const std::vector<std::int64_t>& split);

} // namespace tapestry::search
