// Calibration (SPEC §6, `tapestry calibrate`): measures a machine through a
// real backend and the real executor and returns a target whose `profile`
// holds what was measured (core/cost/profile.hpp):
// - per kernel family, a representative kernel of the standard library on
//   one-operation graphs of growing size, as a one-shard plan on one device
//   (the `alone` table) and as one equal shard on each of the N devices at once
//   (the `all` table): a shard's time on its worker (ExecutionStats::shardTimes);
// - the executor's fixed cost of one task: the wall time of a tiny operation
//   cut into 32 shards on one device less the shards' own times, per shard;
//   and the start overhead: when the last worker of an N-device plan began;
// - copies between devices and from the host (allocation and copy, as a
//   transfer does them): latency and bandwidth, into the target's links/host.
// The roofline figures (devices.flops.float32, memory_bandwidth) are set from
// the best measured rates, so a kernel of no family is costed from this
// machine too. docs/cost-model.md explains the method and its error.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "backends/executor.hpp"
#include "core/cost/target.hpp"
#include "core/metakernel/library.hpp"

namespace tapestry::backend {

struct CalibrationOptions {
  // Wall-clock budget for all measurements; each family's largest sizes are
  // left out first when it runs short. At least 0.05 s.
  double budgetSeconds = 60;
  // Progress: the fraction of the budget used, and what is being measured.
  std::function<void(double fraction, std::string_view what)> progress;
};

// Measures `backend` with `base`'s device count (every device busy for the
// `all` tables) and returns `base` with measured links, host link, roofline
// figures and profile. `machine` and `date` label the profile.
cost::Target calibrate(Backend& backend, const metakernel::MetakernelLibrary& library,
                       cost::Target base, const std::string& machine, const std::string& date,
                       const CalibrationOptions& options = {});

// A family's table measured twice (calibrate times every family's points
// again after every family's first pass, while the budget lasts): each point
// of `table` keeps the smaller of its two times, `alone` and `all` apart.
// Other work on the machine only adds time, and comes in stretches of
// seconds. Returns each point's slower time over its faster one (alone, then
// all). InternalError when `again` has other points.
std::vector<double> keepFaster(cost::ProfileTable& table, const cost::ProfileTable& again);

// How far the two passes of the tables were apart (Profile::passDifference,
// passDifferenceMax): the median and the largest of keepFaster's ratios, less
// 1; 0 when no point was timed twice.
void passDifference(std::vector<double> ratios, cost::Profile& profile);

// `mpirun -n K tapestry calibrate` (docs/distributed.md): round trips of
// 4 KiB to 64 MiB between ranks 0 and 1 over `link`, as the executor's
// cross-rank transfers make them (a packed host buffer sent, received into
// another). Every rank calls it (ranks past 1 only meet the others at its
// barriers). Returns, on rank 0, (bytes, one-way seconds) per size: half the
// median round trip, over about `seconds` in all; empty on the others.
std::vector<std::pair<double, double>> measureRankLink(RankLink& link, double seconds);

// The spread of predicted speedups that `optimize` weighs a plan's gain over
// one device against (docs/cost-model.md). One sample per small graph: the
// model's predicted speedup of the graph split over every device against one
// device, and the speedups measured in each of calibrate's passes. The
// spread is e^m - 1, where m is the median over the samples of
// |ln(median of its passes / predicted)|; 0 without a usable sample. The
// median of passes keeps a burst of load during one pass from deciding it.
struct SpeedupSample {
  double predicted = 0;
  std::vector<double> measured;
  double single = 0;    // the graph's predicted time on one device
  std::string family{}; // the kernel family of its operation
};
double speedupSpread(const std::vector<SpeedupSample>& samples);
// The spread by size (cost::Profile::spreadByTime): the usable samples in
// order of their one-device time, in groups of three (the last ones taking
// the remainder), each a point at its geometric mean time with its group's
// speedupSpread. Empty with fewer than two groups.
std::vector<cost::SpreadPoint> spreadByTime(std::vector<SpeedupSample> samples);
// The spread by family (cost::Profile::spreadByFamily): speedupSpread over
// each family's samples, for the families with at least three.
std::map<std::string, double, std::less<>>
spreadByFamily(const std::vector<SpeedupSample>& samples);

// latency + bytes / bandwidth fitted to (bytes, seconds) points as calibrate
// fits the copies between devices: the smallest size's time, and the slope
// between 256 KiB and 4 MiB.
cost::LinkSpec fitLink(const std::vector<std::pair<double, double>>& points);

} // namespace tapestry::backend
