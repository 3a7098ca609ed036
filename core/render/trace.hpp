// Timelines as a Chrome trace (the JSON object format of the Trace Event
// Format, which Perfetto at ui.perfetto.dev and chrome://tracing open, and
// which PyTorch's profiler, JAX and TensorFlow write too):
//
//   {"displayTimeUnit": "ns",
//    "otherData": {"tapestry": "trace/v1", "graph", "target", "devices", "processes": [...]},
//    "traceEvents": [one event per line]}
//
// Each timeline is one process (pid 1, 2, ... in the order given: the
// prediction first), named by its label; each track one thread (tid 1 + the
// track's index: devices first, then links). Events:
// - "M": process_name, process_sort_index, thread_name, thread_sort_index;
// - "X": one complete slice per shard, transfer and reduction, cat "shard",
//   "transfer" or "reduction", with its facts in args (operation, kernel, shard
//   index range, FLOPs, bytes; tensor, region, places; combine, steps) and
//   "critical": true on the critical path; per thread in start order, and
//   never partially overlapping (timeline.hpp);
// - "s"/"f": a flow arrow per data dependency, cat "flow", one id each, "s" at
//   the producer's start, "f" at the consumer's start bound to it ("bp": "e");
// - "C": the live bytes per device over time, counter "memory device D".
// Timestamps ("ts", "dur") are microseconds from the run's start, as the format
// requires; fractions of a microsecond are kept.
#pragma once

#include <string>
#include <vector>

#include "core/cost/plan_file.hpp"
#include "core/render/timeline.hpp"

namespace tapestry::render {

// The trace of `loaded`'s timelines (each built from that plan).
std::string traceJson(const plan::LoadedPlan& loaded, const std::vector<Timeline>& timelines);

} // namespace tapestry::render
