// Small helpers shared by the benchmark programs of bench/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tapestry::bench {

// The median of `v` (the mean of the middle two for an even count); v must
// not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

} // namespace tapestry::bench
