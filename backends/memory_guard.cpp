#include "backends/memory_guard.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "backends/dtype.hpp"
#include "core/cost/units.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

std::int64_t add(std::int64_t a, std::int64_t b) {
  return a > kMax - b ? kMax : a + b;
}

std::int64_t tensorBytes(const metakernel::TensorType& t) {
  std::int64_t bytes = static_cast<std::int64_t>(dtypeSize(parseDType(t.dtype)));
  for (std::int64_t d : t.shape) {
    if (d == 0) {
      return 0;
    }
    if (bytes > kMax / d) {
      return kMax;
    }
    bytes *= d;
  }
  return bytes;
}

std::optional<std::int64_t> readMemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      return kib * 1024;
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> readCgroupLimit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(in >> text) || text == "max") {
    return std::nullopt;
  }
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || value <= 0) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(value);
}

} // namespace

HostMemoryNeed hostMemoryNeed(const plan::LoadedPlan& loaded, bool devicesOnHost, bool check) {
  const graph::ExpandedGraph& g = loaded.graph;
  // A rewritten plan's inputs are drawn for, and checked against, the graph it
  // was made from (run_command.cpp).
  const graph::ExpandedGraph& source = loaded.origin ? loaded.origin->graph : g;
  HostMemoryNeed need;
  for (const graph::Tensor& t : source.tensors) {
    if (t.isGraphInput()) {
      need.inputs = add(need.inputs, tensorBytes(t.type));
    }
  }
  if (check) {
    // The unsharded evaluations run one after the other (backends/check.hpp),
    // of the original graph, and after approximate rewrites of the plan's own
    // graph too: each needs every tensor once, in its dtype or widened.
    std::vector<const graph::ExpandedGraph*> evaluatedGraphs = {&source};
    if (loaded.origin && !loaded.origin->approximateRules().empty()) {
      evaluatedGraphs.push_back(&g);
    }
    for (const graph::ExpandedGraph* evaluated : evaluatedGraphs) {
      std::int64_t baseline = 0; // every tensor in its dtype
      std::int64_t wide = 0;     // every tensor with floats widened to float64
      for (const graph::Tensor& t : evaluated->tensors) {
        baseline = add(baseline, tensorBytes(t.type));
        metakernel::TensorType widened = t.type;
        if (isFloat(parseDType(t.type.dtype))) {
          widened.dtype = dtypeName(DType::Float64);
        }
        wide = add(wide, tensorBytes(widened));
      }
      need.reference = std::max({need.reference, baseline, wide});
    }
  }
  for (std::size_t t : g.outputs) {
    need.outputs = add(need.outputs, tensorBytes(g.tensors[t].type));
  }
  if (devicesOnHost) {
    for (std::int64_t peak : loaded.simulation.peakPerDevice) {
      need.devices = add(need.devices, peak);
    }
  }
  return need;
}

std::optional<std::int64_t> availableMemory() {
  if (const char* text = std::getenv("TAPESTRY_AVAILABLE_MEMORY")) {
    try {
      return cost::parseSize(text);
    } catch (const Error& e) {
      throw Error("TAPESTRY_AVAILABLE_MEMORY: " + e.message(), ExitCode::Usage);
    }
  }
  std::optional<std::int64_t> available = readMemAvailable();
  if (const std::optional<std::int64_t> limit = readCgroupLimit()) {
    available = available ? std::min(*available, *limit) : *limit;
  }
  return available;
}

void refuseIfTooBig(const std::string& planFile, const HostMemoryNeed& need,
                    std::optional<std::int64_t> available) {
  if (!available || need.total() <= *available) {
    return;
  }
  std::ostringstream parts;
  parts << "inputs " << cost::formatSize(need.inputs);
  if (need.devices > 0) {
    parts << ", device peaks " << cost::formatSize(need.devices);
  }
  parts << ", outputs " << cost::formatSize(need.outputs);
  if (need.reference > 0) {
    parts << ", --check reference " << cost::formatSize(need.reference);
  }
  throw Error(SourceLocation{planFile, 0, 0, {}},
              "the run needs " + cost::formatSize(need.total()) + " of host memory (" +
                  parts.str() + ") but only " + cost::formatSize(*available) +
                  " is available; nothing was allocated");
}

} // namespace tapestry::backend
