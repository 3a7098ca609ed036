#include "core/diag/suggest.hpp"

#include <algorithm>

namespace tapestry {

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::size_t width = b.size() + 1;
  std::vector<std::size_t> d((a.size() + 1) * width);
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * width + j]; };
  for (std::size_t i = 0; i <= a.size(); ++i) {
    at(i, 0) = i;
  }
  for (std::size_t j = 0; j <= b.size(); ++j) {
    at(0, j) = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.size(), b.size());
}

std::optional<std::string_view> closestName(std::string_view name,
                                            const std::vector<std::string_view>& candidates) {
  if (name.size() > 64) {
    return std::nullopt; // the distance is quadratic in the length
  }
  const std::size_t limit =
      name.size() <= 1 ? 0 : std::min<std::size_t>(2, std::max<std::size_t>(1, name.size() / 3));
  std::size_t best = limit + 1;
  std::string_view found;
  for (std::string_view c : candidates) {
    if (c.size() > name.size() + limit || name.size() > c.size() + limit) {
      continue;
    }
    const std::size_t d = editDistance(name, c);
    if (d < best) {
      best = d;
      found = c;
    }
  }
  if (best > limit) {
    return std::nullopt;
  }
  return found;
}

} // namespace tapestry
