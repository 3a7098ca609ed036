// `tapestry bench`'s stopping rule: how many timed runs, and when a median is
// stable (core/driver/run_command.hpp declares it with run).
#include "core/driver/run_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "core/driver/execution.hpp"

namespace tapestry::driver {

MedianStability medianStability(const std::vector<double>& times, double tolerance) {
  MedianStability s;
  const std::size_t n = times.size();
  if (n == 0) {
    return s;
  }
  s.median = median(times);
  if (n < 2 || !(s.median > 0)) {
    return s; // one run has nothing to compare with
  }
  s.lastRuns = (n + 3) / 4;
  const auto kept = static_cast<std::ptrdiff_t>(n - s.lastRuns);
  const double before = median(std::vector<double>(times.begin(), times.begin() + kept));
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double q1 = sorted[(n - 1) / 4];
  const double q3 = sorted[(3 * (n - 1) + 3) / 4]; // ceil(3(n-1)/4)
  s.moved = std::fabs(s.median - before) / s.median;
  s.uncertainty = 0.93 * (q3 - q1) / std::sqrt(static_cast<double>(n)) / s.median;
  s.stable = s.moved <= tolerance && s.uncertainty <= tolerance;
  return s;
}

RepeatLimits repeatLimits(const BenchConfig& config) {
  RepeatLimits limits;
  limits.fewest = config.repeat;
  limits.most = config.maxRepeat > 0 ? config.maxRepeat : std::max(config.repeat, 50);
  limits.seconds = config.maxSeconds;
  return limits;
}

bool repeatAgain(const std::vector<double>& times, double elapsed, const RepeatLimits& limits) {
  const auto n = static_cast<int>(times.size());
  if (n < limits.fewest) {
    return true;
  }
  if (n >= limits.most || elapsed >= limits.seconds) {
    return false;
  }
  return !medianStability(times).stable;
}

} // namespace tapestry::driver
