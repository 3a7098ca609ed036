// Pictures (SPEC §8): the three views as Graphviz drawings.
//   graph: tensors (dtype, shape) and operations (kernel, index space, params),
//          edges labelled with the port and a compact form of its IPF;
//   plan:  one cluster per device, the shards inside with their index ranges,
//          local reads, transfers with their bytes, reductions; one colour per op;
//   front: a scatter plot of the Pareto front, time against peak memory, with the
//          baselines marked and the selected plan highlighted;
//   timeline: a plan's schedule as a Gantt chart, a lane per device and link,
//          predicted (and measured, from a trace) lanes one above the other.
// Each view returns a Drawing (drawing.hpp); graphviz.hpp writes it as DOT text
// or lays it out into svg/png/pdf. docs/render.md shows and explains them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/cost/plan_file.hpp"
#include "core/graph/graph.hpp"
#include "core/json/json.hpp"
#include "core/render/drawing.hpp"
#include "core/render/graphviz.hpp"
#include "core/render/timeline.hpp"
#include "core/zspace/index_projection.hpp"

namespace tapestry::render {

// Original: a plan's graph as it was before rewrite rules changed it (the
// plan's "rewrites.original"), drawn like Graph.
enum class View { Graph, Plan, Front, Timeline, Original };
const char* viewName(View view); // "graph", "plan", "front", "timeline", "original"

struct ViewOptions {
  std::string rankdir = "TB"; // TB, LR, BT or RL (graph and plan views)
  // Graph view: fold single-use graph inputs (weights) into their operation,
  // draw each name block ("block3.attn.q" belongs to "block3") as one node and
  // merge runs of identical blocks ("block0 … block11 ×12"). Plan view: one node
  // per operation and device instead of one per shard, and at four devices or
  // more one panel for devices that do the same work.
  bool collapse = false;
  // More content nodes than this is an Error (exit 1) that suggests --collapse.
  std::size_t maxNodes = 2000;
  // Graph view: an extra line under an operation (by its index), as the plan
  // overview draws each operation's split and devices.
  std::map<std::size_t, std::string> opNotes;
};

// The IPF of one tensor of a port, compactly, in terms of index dims i0, i1, ...:
// per tensor dim, ":" for the whole dim, "a:b" for a fixed range, an affine
// expression ("i0", "2·i2+i5-1") for a single element, and "e:+n" for a window
// of n elements starting at e. "[i0, :]" is linear's X: row i0, every column.
std::string compactIpf(const IndexProjection& ipf, const std::vector<std::int64_t>& shape);

Drawing graphView(const graph::ExpandedGraph& g, const ViewOptions& options);
Drawing planView(const plan::LoadedPlan& plan, const ViewOptions& options);
// A plan too deep to draw shard by shard (more than kOverviewOperations
// operations, or more than kOverviewShards shards): its graph view, each
// operation labelled with its split and devices. dot lays out a plan view of
// an imported CNN on 8 devices (hundreds of ranks, long edges) in hours, its
// graph view in seconds; fused, ResNet-50 has 57 operations but 384 shards
// on h100x8, and dot did not lay those out in 120 s.
inline constexpr std::size_t kOverviewOperations = 60;
inline constexpr std::size_t kOverviewShards = 200;
// Whether `plan` is drawn as the plan overview.
bool needsOverview(const plan::LoadedPlan& plan);
Drawing planOverview(const plan::LoadedPlan& plan, const ViewOptions& options);
// `front` is a front/v1 document; a malformed one is a located Error (exit 1).
Drawing frontView(const json::Value& front, const ViewOptions& options);

// What the timeline view draws: timelines of one plan (the prediction first),
// with the operations' names and kernels in graph order (Slice::op indexes
// them; their colours are the graph and plan views').
struct TimelinePicture {
  std::string name;   // the graph
  std::string target; // the target's name
  std::vector<std::string> operations;
  std::vector<std::string> kernels;
  std::vector<Timeline> timelines;
};
TimelinePicture timelinePicture(const plan::LoadedPlan& loaded, std::vector<Timeline> timelines);
// A trace file written by tapestry (trace, run --trace, bench --trace; its
// otherData.tapestry is "trace/v1") read back: one timeline per process, tracks
// from its thread names, slices from its complete events. A malformed trace is
// a located Error (exit 1).
TimelinePicture timelinePictureFromTrace(const json::Value& trace);
Drawing timelineView(const TimelinePicture& picture, const ViewOptions& options);

// Throws Error "FILE: graph has N nodes, more than --max-nodes M (use --collapse)"
// when the drawing has more content nodes than allowed. `what`: "graph", "plan",
// "front"; `file`: the input as diagnostics name it.
void checkNodeLimit(const Drawing& drawing, const ViewOptions& options, const std::string& what,
                    const std::string& file = {});

} // namespace tapestry::render
