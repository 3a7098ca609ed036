// The plan/v1 file (SPEC §7): a plan that `run`, `bench` and `render` can use
// with nothing else: the expanded graph, the resolved target, the options, every
// shard with its selections, the reductions, the transfers, the simulated
// schedule and the objectives. Loading rebuilds the plan from the graph, target
// and per-op choices and requires every stored field to match, so an edited
// file is an error located at the offending value (exit 1); stored predictions
// that differ from this version's (a plan saved by another version) are a
// warning, and this version's are used.
//
// Layout (key order fixed, output byte-for-byte deterministic):
//   {"tapestry": "plan/v1",
//    "kernels": {NAME: {"file": PATH, "source": YAML}}   (only with -k templates)
//    "graph": {expanded/v1},
//    "rewrites": {"original": {expanded/v1}, "sites": [{"rule", "replaced", "added"}]}
//                (only when rewrite rules changed the graph: docs/rewrites.md)
//    "target": {cost::toJson},
//    "options": {"inputs_on": "host"|"free"|"constants"},
//    "operations": {...}, "reductions": [...], "transfers": [...]   (plan.hpp)
//    "schedule": [{"kind": "shard", "op", "shard", "device", "start", "end"} |
//                 {"kind": "transfer", "transfer", "tensor", "from", "to", "start", "end"} |
//                 {"kind": "reduction", "reduction", "op", "tensor", "device", "start", "end"}]
//                (in submission order, stably sorted by start time),
//    "objectives": {"time_s", "peak_memory_bytes", "transfer_bytes", "feasible",
//                   "peak_memory_per_device": [...]}}
#pragma once

#include <optional>

#include <string>
#include <vector>

#include "core/cost/simulator.hpp"
#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
#include "core/graph/graph.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::plan {

// The schedule array described above.
Json scheduleToJson(const graph::ExpandedGraph& g, const ShardPlan& p, const cost::Simulation& s);

// Where a plan's graph came from when rewrite rules changed it
// (docs/rewrites.md): the graph as it was given, and the sites rewritten
// ([{"rule", "replaced": [names], "added": [names]}], "approximate": true on
// the sites of approximate rules). `run --check` compares the plan's outputs
// with the original graph's float64 result (docs/check.md says how, after
// approximate rewrites).
struct PlanOrigin {
  graph::ExpandedGraph graph;
  Json sites = Json::array();

  // The distinct rules of the approximate sites, in site order.
  std::vector<std::string> approximateRules() const;
};

// The whole plan/v1 document; `s` must be simulate(g, t, p). With `library`
// (the one `g` was expanded with), the templates of g's kernels that are not
// in the standard library (-k files) are embedded as "kernels", so the plan
// runs, benches and renders without -k.
// With `origin`, the plan records it as "rewrites".
Json planToJson(const graph::ExpandedGraph& g, const cost::Target& t, const ShardPlan& p,
                const cost::Simulation& s, const metakernel::MetakernelLibrary* library = nullptr,
                const PlanOrigin* origin = nullptr);
// json::format(planToJson(...), graph::kExpandedWidth): what `optimize -o` writes.
std::string writePlan(const graph::ExpandedGraph& g, const cost::Target& t, const ShardPlan& p,
                      const cost::Simulation& s,
                      const metakernel::MetakernelLibrary* library = nullptr,
                      const PlanOrigin* origin = nullptr);

struct LoadedPlan {
  graph::ExpandedGraph graph;
  cost::Target target;
  PlanChoice choice;
  ShardPlan plan;
  cost::Simulation simulation;
  std::optional<PlanOrigin> origin; // "rewrites", when the plan has it
  // Severity::Warning diagnostics of the loader: a kernel cost of the
  // embedded graphs (flops, bytes) that differs from this version's
  // expansion, and a stored schedule or objective that differs from this
  // version's simulation (the plan was saved by another version, or edited);
  // `graph` and `simulation` are this version's.
  std::vector<Diagnostic> warnings;
};

// Decodes and re-validates a plan/v1 document: the embedded graph is expanded
// again (graph::expand checks its stored expanded fields), the target decoded
// (cost::targetFromJson), each operation's split and devices checked and the plan
// rebuilt and re-simulated; every stored shard index, device, selection,
// reduction, transfer and schedule task must equal the rebuilt one. A mismatch
// is a located Error, e.g.
//   at /operations/fc1/shards/3/selections/inputs/X/0/range: selection
//   zr[0:64, 0:128] does not match the IPF projection zr[0:64, 0:256]
// The predictions (the schedule's order and times, the objectives) are
// compared too (times to a relative 1e-9), and so are the kernel costs of
// the embedded graphs (graph::expand's costWarnings), but the first
// difference of each is a warning in `warnings`, not an error: a cost model
// that changed between versions must not break the plans users saved.
// `root`'s document must outlive the call only (the result owns its data).
LoadedPlan decodePlan(const json::Value& root, const metakernel::MetakernelLibrary& library);
// Reads PATH ("-" is standard input) and decodes it.
LoadedPlan loadPlan(const std::string& path, const metakernel::MetakernelLibrary& library);

} // namespace tapestry::plan
