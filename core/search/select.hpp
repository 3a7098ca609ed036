// Which front plan `optimize` writes to -o (SPEC §7 --select, --memory-cap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/search/archive.hpp"

namespace tapestry::search {

enum class SelectPolicy {
  Fastest,  // least time; ties: least memory, then fewest bytes moved
  Smallest, // least peak memory; ties: least time
  Knee,     // farthest below the line between the fastest and the smallest plan,
            // in time and memory each normalized to [0, 1] over the front
  Time,     // the fastest under --memory-cap (which it requires)
};

std::optional<SelectPolicy> parseSelectPolicy(std::string_view name);
const char* selectPolicyName(SelectPolicy policy);

// The index in `front` of the selected plan. With a memory cap only plans whose
// peak is at most the cap are candidates, for every policy; none is an Error
// (exit 1): "no plan on the front fits under 40GiB (the smallest needs 52.3GiB)".
// An empty front is an InternalError (callers report that case themselves).
std::size_t selectPlan(const std::vector<Evaluated>& front, SelectPolicy policy,
                       std::optional<std::int64_t> memoryCap = std::nullopt);

// Devices a plan choice runs shards on.
std::size_t devicesOf(const plan::PlanChoice& choice);

// When one device is selected instead (issue 32): a sub-millisecond plan
// predicted 1.1x faster than one device may well run slower, because the
// prediction itself is only so good. With a calibrated `spread` (cost::
// Profile::spread, > 0), a selected plan on more than one device whose
// predicted gain over the single-device baseline (`singleTime` / its time)
// is at most 1 + spread gives way to one device.
struct OneDeviceRule {
  bool applies = false;
  double gain = 0;   // the selected plan's predicted speedup over one device
  double spread = 0; // what the gain was weighed against
  // The fastest front plan on one device, when the front has one; else the
  // caller writes the single baseline.
  std::optional<std::size_t> index;
};
OneDeviceRule oneDeviceRule(const std::vector<Evaluated>& front, std::size_t selected,
                            double singleTime, double spread);

} // namespace tapestry::search
