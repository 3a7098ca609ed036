// The cost model (SPEC §7): a discrete-event simulation of a plan on a target.
// A shard takes max(flops / rate(dtype), bytes / memory_bandwidth) +
// launch_overhead; a transfer takes latency + bytes / bandwidth and occupies its
// link; shards start when their inputs are on their device and the device is
// free. Peak memory per device counts every region live there over the
// schedule; a plan over any device's memory is infeasible.
//
// A target with a measured profile (core/cost/profile.hpp) replaces the
// roofline for the operations of a profiled kernel family: a shard takes its
// family's interpolated time at its size (FLOPs or bytes), between the
// one-device and all-devices tables by how many devices the plan keeps busy,
// plus the profile's task overhead, which every transfer and reduction step
// pays too (instead of launch_overhead). Reduction combines use the
// elementwise table.
//
// The simulation is list scheduling, fully deterministic: operations are taken
// in topological order; for each, its input transfers (plan order), its shards
// (shard order), then its reductions (steps in tree order) are submitted to
// their resources. Every resource serves its tasks in submission order:
// - one compute queue per device (shards and reduction combines);
// - one queue per ordered pair of places (device -> device, host -> device),
//   each direction its own link.
// A task starts at max(resource free, everything it needs is ready).
// - A shard's rate is that of the dtype of its first output (float32's figure
//   when the target gives none).
// - A reduction step moves `from`'s partial to `into`'s device when they
//   differ (a transfer), then combines it there: a kernel of one op per element
//   touching 3 x the region's bytes (two partials read, one written).
// Memory, per device: every output tile and partial (from its shard's start),
// every received transfer (from the transfer's start) and every resident graph
// input (from time 0) is live until the end of its last use there (the shards
// reading it, the transfers sending it, the reduction steps using it; its own
// production end when nothing uses it). Graph outputs (final tiles and reduction
// results) are never freed. At equal times frees come before allocations.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/cost/target.hpp"
#include "core/graph/graph.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::cost {

struct Objectives {
  double timeS = 0;                 // makespan
  std::int64_t peakMemoryBytes = 0; // max over devices
  std::int64_t transferBytes = 0;   // total bytes moved (host and device links)
  bool feasible = true;             // no device over its memory
  bool operator==(const Objectives&) const = default;
};

struct Interval {
  double start = 0;
  double end = 0;
  bool operator==(const Interval&) const = default;
};

struct Simulation {
  Objectives objectives;
  std::vector<std::vector<Interval>> shards; // [op][shard]
  std::vector<Interval> transfers;           // parallel to ShardPlan::transfers
  std::vector<Interval>
      reductions; // parallel to ShardPlan::reductions (first step's start to last step's end)
  std::vector<std::int64_t> peakPerDevice; // one per target device
};

// Throws Error (exit 1) when the plan uses a device the target does not have.
Simulation simulate(const graph::ExpandedGraph& g, const Target& t, const plan::ShardPlan& p);
// The same from a plan's tasks (plan::summarize, plan::PlanBuilder::tasks);
// Simulation::shards is indexed [op][shard] as in the plan.
Simulation simulate(const plan::PlanTasks& tasks, const Target& t);

// The objectives only (what the search ranks plans by); the same numbers as
// simulate(...).objectives.
Objectives evaluate(const graph::ExpandedGraph& g, const Target& t, const plan::ShardPlan& p);

// Whether the model prices the CPU backend's copies of images that are not
// blocks of their regions (plan::ShardTask::assembled): a CPU profile, or a
// CPU target without a profile. The CUDA backend's convolutions read their
// images as they are.
bool pricesImageCopies(const Target& t);

// The search's inner loop: choice -> objectives for one graph and target,
// reusing all scratch memory between calls (a plan::PlanBuilder and the
// simulator's queues), so that a warm evaluate() allocates nothing. Not
// thread-safe: one per thread. The graph and target must outlive it, and stay
// as they are: the ops' rates and profile tables are looked up once.
class ChoiceSimulator {
public:
  ChoiceSimulator(const graph::ExpandedGraph& g, const Target& t, plan::PlanOptions options = {});
  // A context shared between threads' evaluators.
  ChoiceSimulator(plan::PlanContext context, const Target& t, plan::PlanOptions options = {});
  ~ChoiceSimulator();
  ChoiceSimulator(ChoiceSimulator&&) noexcept;
  ChoiceSimulator& operator=(ChoiceSimulator&&) noexcept;

  // Throws like plan::buildPlan for an invalid choice (plan::InvalidChoice names
  // the op). Equal to simulate(g, t, buildPlan(g, t.deviceCount(), choice,
  // options)).objectives.
  Objectives evaluate(const plan::PlanChoice& choice);
  // The full plan and simulation of a choice (for the plans a search keeps).
  plan::ShardPlan plan(const plan::PlanChoice& choice);

  const Target& target() const;
  plan::PlanBuilder& builder();

  struct Scratch;

private:
  const Target* target_;
  plan::PlanBuilder builder_;
  std::unique_ptr<Scratch> scratch_;
};

// "a dominates b": no worse in every objective, better in one. Feasibility comes
// first: an infeasible plan never dominates a feasible one, and a feasible plan
// dominates every infeasible one.
bool dominates(const Objectives& a, const Objectives& b);

} // namespace tapestry::cost
