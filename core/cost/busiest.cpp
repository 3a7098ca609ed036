#include "core/cost/busiest.hpp"

#include <map>
#include <utility>
#include <vector>

#include "core/diag/error.hpp"

namespace tapestry::cost {

Busiest busiest(const plan::ShardPlan& plan, const Simulation& simulation) {
  if (simulation.shards.size() != plan.ops.size() ||
      simulation.transfers.size() != plan.transfers.size()) {
    throw InternalError("busiest: the simulation is not of this plan");
  }
  Busiest out;
  out.seconds = simulation.objectives.timeS;
  std::vector<double> deviceSeconds;
  std::vector<std::size_t> deviceShards;
  for (std::size_t op = 0; op < plan.ops.size(); ++op) {
    const std::vector<plan::Shard>& shards = plan.ops[op].shards;
    for (std::size_t s = 0; s < shards.size(); ++s) {
      const auto d = static_cast<std::size_t>(shards[s].device);
      if (d >= deviceSeconds.size()) {
        deviceSeconds.resize(d + 1, 0);
        deviceShards.resize(d + 1, 0);
      }
      deviceSeconds[d] += simulation.shards[op][s].end - simulation.shards[op][s].start;
      ++deviceShards[d];
    }
  }
  for (std::size_t d = 0; d < deviceSeconds.size(); ++d) {
    if (deviceShards[d] > 0 && (out.device < 0 || deviceSeconds[d] > out.deviceSeconds)) {
      out.device = static_cast<int>(d);
      out.deviceSeconds = deviceSeconds[d];
      out.deviceShards = deviceShards[d];
    }
  }
  struct Link {
    double seconds = 0;
    std::size_t transfers = 0;
    std::int64_t bytes = 0;
  };
  std::map<std::pair<int, int>, Link> links; // ordered: ties go to the first
  for (std::size_t i = 0; i < plan.transfers.size(); ++i) {
    const plan::Transfer& t = plan.transfers[i];
    Link& link = links[{t.from, t.to}];
    link.seconds += simulation.transfers[i].end - simulation.transfers[i].start;
    ++link.transfers;
    link.bytes += t.bytes;
  }
  for (const auto& [places, link] : links) {
    if (out.linkTo < 0 || link.seconds > out.linkSeconds) {
      out.linkFrom = places.first;
      out.linkTo = places.second;
      out.linkSeconds = link.seconds;
      out.linkTransfers = link.transfers;
      out.linkBytes = link.bytes;
    }
  }
  return out;
}

} // namespace tapestry::cost
