// What several unit tests share: the standard library, graphs expanded from
// JSON text, a roomy CPU target, and plan choices of a few kinds (data
// parallel, split reductions, random cuts) for executor and backend tests.
// Header-only; everything lives in tapestry::testing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
#include "core/diag/source.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/graph.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"
#include "core/plan/plan.hpp"

namespace tapestry::testing {

// ---------------------------------------------------------------- errors

// What a thrown Error said; message "<no error>" (code Ok) when nothing was.
struct Failure {
  std::string message;
  std::string pointer;  // JSON pointer of a located decoding error
  std::string location; // "FILE:LINE:COL" (or less) of a located error
  std::string what;     // the formatted diagnostic
  ExitCode code = ExitCode::Ok;
  bool internal = false;
};

// Runs f and reports the Error it throws, if any (other exceptions propagate).
template <class F> Failure failureOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    const bool internal = dynamic_cast<const InternalError*>(&e) != nullptr;
    return {e.message(),
            e.diagnostic().location.pointer,
            e.diagnostic().location.toString(),
            e.what(),
            e.exitCode(),
            internal};
  }
  return {"<no error>", "", "", "", ExitCode::Ok, false};
}

// The stored plans of testdata/plans, sorted.
inline std::vector<std::string> testdataPlans() {
  std::vector<std::string> plans;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(TAPESTRY_TESTDATA_DIR) + "/plans")) {
    if (entry.path().extension() == ".json") {
      plans.push_back(entry.path().string());
    }
  }
  std::sort(plans.begin(), plans.end());
  return plans;
}

inline const metakernel::MetakernelLibrary& lib() {
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  return library;
}

// Parses, decodes and expands `text` as the file "g.json".
inline graph::ExpandedGraph expandText(const std::string& text) {
  json::Document doc = json::Document::parse(SourceFile("g.json", text));
  return graph::expand(graph::decodeGraph(json::Value(doc)), lib());
}

// A target with `devices` CPU devices and memory to spare (figures only shape
// the schedule the executor follows).
inline cost::Target roomyCpuTarget(int devices) {
  cost::Target t;
  t.name = "test";
  t.devices.count = devices;
  t.devices.kind = cost::DeviceKind::Cpu;
  t.devices.memory = std::int64_t{1} << 40;
  t.devices.memoryBandwidth = 20e9;
  t.devices.flops = {{"float32", 50e9}};
  t.devices.launchOverhead = 5e-6;
  t.links = cost::LinkSpec{10e9, 1e-6};
  t.host = cost::LinkSpec{10e9, 2e-6};
  return t;
}

// ---------------------------------------------------------------- plan choices

// `choice` with every operation buildPlan rejects made whole on its first
// device (the single-device plan when even that fails).
inline plan::PlanChoice repaired(const graph::ExpandedGraph& g, int devices,
                                 plan::PlanChoice choice) {
  for (std::size_t attempt = 0; attempt <= g.operations.size(); ++attempt) {
    try {
      plan::buildPlan(g, devices, choice);
      return choice;
    } catch (const plan::InvalidChoice& e) {
      plan::OpChoice& op = choice.ops[e.op];
      op = plan::OpChoice{std::vector<std::int64_t>(op.split.size(), 1), {op.devices.front()}};
    }
  }
  return plan::singleDeviceChoice(g);
}

inline std::int64_t extent(const graph::Operation& op, std::size_t d) {
  return op.application.index.extent(d);
}

inline bool isReductionDim(const graph::Operation& op, std::size_t d) {
  const auto& dims = op.application.reductionDims;
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

// Shards 0..shards-1 dealt round robin over the devices, starting at `first`.
inline std::vector<int> spread(std::int64_t shards, int devices, int first = 0) {
  std::vector<int> out;
  for (std::int64_t s = 0; s < shards; ++s) {
    out.push_back(static_cast<int>((s + first) % devices));
  }
  return out;
}

// Every op cut into `parts` along its leading dim (when it has one).
inline plan::PlanChoice dataParallel(const graph::ExpandedGraph& g, int parts, int devices) {
  plan::PlanChoice c;
  for (const graph::Operation& op : g.operations) {
    std::vector<std::int64_t> split(op.application.index.rank(), 1);
    if (!split.empty() && !isReductionDim(op, 0)) {
      split[0] = std::max<std::int64_t>(1, std::min<std::int64_t>(parts, extent(op, 0)));
    }
    c.ops.push_back(plan::OpChoice{split, spread(split.empty() ? 1 : split[0], devices)});
  }
  return repaired(g, devices, c);
}

// Ops with splittable reduction dims cut along the first one (and the leading
// dim when it is not one); the others along their leading dim.
inline plan::PlanChoice reductionSplit(const graph::ExpandedGraph& g, int devices) {
  plan::PlanChoice c;
  std::size_t i = 0;
  for (const graph::Operation& op : g.operations) {
    std::vector<std::int64_t> split(op.application.index.rank(), 1);
    const auto& dims = op.application.reductionDims;
    if (op.application.reductionSplittable && !dims.empty()) {
      for (std::size_t d : dims) {
        if (extent(op, d) > 1) {
          split[d] = std::min<std::int64_t>(3, extent(op, d));
          break;
        }
      }
    }
    if (!split.empty() && !isReductionDim(op, 0)) {
      split[0] = std::min<std::int64_t>(2, std::max<std::int64_t>(1, extent(op, 0)));
    }
    std::int64_t shards = 1;
    for (std::int64_t s : split) {
      shards *= s;
    }
    c.ops.push_back(plan::OpChoice{split, spread(shards, devices, static_cast<int>(i++))});
  }
  return repaired(g, devices, c);
}

// Random cuts (at most 8 shards per op) and placements.
inline plan::PlanChoice randomChoice(const graph::ExpandedGraph& g, int devices,
                                     std::mt19937& rng) {
  plan::PlanChoice c;
  for (const graph::Operation& op : g.operations) {
    const std::size_t rank = op.application.index.rank();
    std::vector<std::int64_t> split(rank, 1);
    std::int64_t shards = 1;
    for (int tries = 0; tries < 3 && rank > 0; ++tries) {
      const std::size_t d = std::uniform_int_distribution<std::size_t>(0, rank - 1)(rng);
      if (isReductionDim(op, d) && !op.application.reductionSplittable) {
        continue;
      }
      const std::int64_t parts = std::uniform_int_distribution<std::int64_t>(1, 3)(rng);
      const std::int64_t next =
          std::min<std::int64_t>(parts, std::max<std::int64_t>(1, extent(op, d)));
      if (shards / split[d] * next > 8) {
        continue;
      }
      shards = shards / split[d] * next;
      split[d] = next;
    }
    std::vector<int> placed;
    for (std::int64_t s = 0; s < shards; ++s) {
      placed.push_back(std::uniform_int_distribution<int>(0, devices - 1)(rng));
    }
    c.ops.push_back(plan::OpChoice{split, placed});
  }
  return repaired(g, devices, c);
}

} // namespace tapestry::testing
