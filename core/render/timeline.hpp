// A plan's schedule as time: one track per device and per link, a slice per
// shard, transfer and reduction, the data dependencies between them, the
// critical path, and the live memory per device over time. Built from the
// simulator's intervals (the prediction) or from an executor run's task times
// (the measurement), both parallel to the plan's lists. The trace writer
// (trace.hpp, Chrome trace event format) and the timeline view
// (render --view timeline) draw the same model.
//
// Tracks: device d's track holds its shards and the reductions whose result
// lives on d; link (from, to)'s track holds the transfers over it (a partial
// move included), `from` a device or the host. Slices on one track never
// partially overlap: a reduction's interval runs from its first step (which may
// be a move on another device's link) to its last combine, so where it would
// overlap the track's earlier slices its start is raised to their end (the
// slice keeps the full span as spanStart). Shards and transfers never need this:
// every device and link serves its tasks one at a time, in the simulation and
// in the executor alike.
//
// Memory per device follows the simulator's rule (core/cost/simulator.hpp):
// every output tile, received transfer and resident input is live from its
// task's start (resident: time 0) to the end of its last use there; graph
// outputs are never freed. A reduction step's use ends with its reduction (the
// steps' own times are not recorded). For a measured run the same rule is
// applied to the measured times, as the executor allocates and frees that way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cost/plan_file.hpp"
#include "core/cost/simulator.hpp"

namespace tapestry::render {

// When each task of a plan ran, in seconds from the start of the run: parallel
// to ShardPlan::ops[op].shards, ::transfers and ::reductions (as cost::Simulation).
struct TaskIntervals {
  std::vector<std::vector<cost::Interval>> shards;
  std::vector<cost::Interval> transfers;
  std::vector<cost::Interval> reductions;
};
TaskIntervals intervalsOf(const cost::Simulation& simulation);

struct Track {
  enum class Kind { Device, Link };
  Kind kind = Kind::Device;
  int device = 0;       // Device: the device
  int from = 0, to = 0; // Link: the places (plan::kHost for the host)
  std::string name;     // "device 0", "link host->0", "link 0->1"
};

struct Slice {
  enum class Kind { Shard, Transfer, Reduction };
  Kind kind = Kind::Shard;
  std::size_t track = 0;
  std::size_t index = 0; // Shard: the op; Transfer, Reduction: index into the plan's list
  std::size_t shard = 0; // Shard only
  std::size_t op = 0;    // the operation it belongs to (its colour): a transfer's first reader
  std::string name;      // "fc1 #0", "x host->0", "sum h"
  double start = 0;      // seconds (raised to the track's earlier slices' end, see above)
  double end = 0;
  double spanStart = 0; // the task's own start
  bool critical = false;
  double seconds() const { return end - start; }
};

// A data dependency: slice `from` produces what slice `to` reads.
struct Flow {
  std::size_t from = 0;
  std::size_t to = 0;
};

struct MemorySample {
  double time = 0;
  std::int64_t bytes = 0; // live on the device from `time` on
};

struct Timeline {
  std::string label; // "predicted" or "measured"
  std::vector<Track> tracks;
  std::vector<Slice> slices; // per track in start order; tracks in order
  std::vector<Flow> flows;
  std::vector<std::vector<MemorySample>> memory; // per device: a step function
  double end = 0;                                // the last slice's end
};

// The timeline of `loaded`'s plan with the tasks at `times`. InternalError when
// `times` is not parallel to the plan.
Timeline buildTimeline(const plan::LoadedPlan& loaded, const TaskIntervals& times,
                       const std::string& label);

// Seconds each device is busy: the lengths of its track's slices, summed (one
// per plan device). What bench reports per device, and what a trace's slices add
// up to.
std::vector<double> deviceBusy(const plan::ShardPlan& p, const TaskIntervals& times);

} // namespace tapestry::render
