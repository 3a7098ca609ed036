// `run` and `bench` refuse a plan whose tensors cannot fit in this machine's
// memory before allocating anything (issue 9): an estimate of the host memory
// the run needs, compared with what the kernel says is available.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/cost/plan_file.hpp"

namespace tapestry::backend {

// Host memory a run of `loaded` needs, in bytes, by part.
struct HostMemoryNeed {
  std::int64_t inputs = 0;    // every graph input, as drawn or read
  std::int64_t devices = 0;   // the plan's predicted peaks, summed over devices
                              // (CPU backend: plan devices share host memory)
  std::int64_t outputs = 0;   // the assembled graph outputs
  std::int64_t reference = 0; // --check: the unsharded evaluations (the float64 one the larger)
  std::int64_t total() const { return inputs + devices + outputs + reference; }
};

// Sums with saturation at INT64_MAX (a plan may describe absurd tensors).
HostMemoryNeed hostMemoryNeed(const plan::LoadedPlan& loaded, bool devicesOnHost, bool check);

// Memory available to this process: MemAvailable of /proc/meminfo, lowered to
// the cgroup's memory.max when one is set. TAPESTRY_AVAILABLE_MEMORY (a size
// such as "512MiB") overrides both (tests use it). nullopt when unknown.
std::optional<std::int64_t> availableMemory();

// Throws Error (exit 1), naming the plan file and the parts of the need, when
// `need` exceeds `available`; does nothing when `available` is unknown.
void refuseIfTooBig(const std::string& planFile, const HostMemoryNeed& need,
                    std::optional<std::int64_t> available);

} // namespace tapestry::backend
