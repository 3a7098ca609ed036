// Where a simulated plan's time goes: its busiest device and its busiest link
// (what `optimize` prints beside the selected plan).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cost/simulator.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::cost {

struct Busiest {
  // The device whose shards run longest in all (lowest index on a tie; -1
  // when the plan has no shards), and that time.
  int device = -1;
  double deviceSeconds = 0;
  std::size_t deviceShards = 0;
  // The link (a pair of places, each a device or plan::kHost, one queue of
  // the simulator) whose transfers take longest in all (the first in
  // (from, to) order on a tie; to is -1 when the plan moves nothing).
  int linkFrom = plan::kHost;
  int linkTo = -1;
  double linkSeconds = 0;
  std::size_t linkTransfers = 0;
  std::int64_t linkBytes = 0;
  // The plan's time, which both are shares of.
  double seconds = 0;

  double deviceShare() const { return seconds > 0 ? deviceSeconds / seconds : 0; }
  double linkShare() const { return seconds > 0 ? linkSeconds / seconds : 0; }
};

// From a plan and its simulation (simulate(g, t, plan)). Reductions' steps are
// not counted on their devices (Simulation keeps one interval per reduction).
Busiest busiest(const plan::ShardPlan& plan, const Simulation& simulation);

} // namespace tapestry::cost
