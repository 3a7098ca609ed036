// The Pareto archive of the search: feasible plans no other kept plan dominates
// over (time, peak memory per device, bytes transferred), at most one per
// objective vector. When a cap is set and an insertion overflows it, one member
// goes: the one with the smallest NSGA-II crowding distance among those that
// only trade bytes moved (dominated in time x memory), else among all; the
// extremes of every objective never do. So the time x memory front is the last
// to be thinned, and the archive stays spread along the front.
#pragma once

#include <cstddef>
#include <vector>

#include "core/cost/simulator.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::search {

// A plan choice with the objectives the cost model gave it.
struct Evaluated {
  plan::PlanChoice choice;
  cost::Objectives objectives;
};

class ParetoArchive {
public:
  // cap 0: unbounded (the exhaustive search keeps the whole true front).
  explicit ParetoArchive(std::size_t cap = 0) : cap_(cap) {}

  // Adds the plan unless it is infeasible, dominated by a member, or has the
  // objectives of a member; removes the members it dominates, then thins to the
  // cap. Returns whether the plan was added (it may be the one thinned away:
  // then false).
  bool insert(Evaluated candidate);

  const std::vector<Evaluated>& members() const { return members_; }
  std::size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  std::size_t cap() const { return cap_; }

  // The members sorted by time, then peak memory, then transfer bytes.
  std::vector<Evaluated> sorted() const;

private:
  std::size_t cap_;
  std::vector<Evaluated> members_; // insertion order
};

// The two orders of objective vectors: by time, then peak memory, then bytes
// moved (fasterThan); by peak memory, then time, then bytes moved (smallerThan).
bool fasterThan(const cost::Objectives& a, const cost::Objectives& b);
bool smallerThan(const cost::Objectives& a, const cost::Objectives& b);

// NSGA-II crowding distance of each objective vector (all of one front): per
// objective, the normalized gap between its neighbours in that objective's
// order, summed; the extremes get infinity.
std::vector<double> crowdingDistances(const std::vector<cost::Objectives>& points);

} // namespace tapestry::search
