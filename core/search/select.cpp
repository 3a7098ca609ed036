#include "core/search/select.hpp"

#include <algorithm>
#include <cmath>

#include "core/cost/units.hpp"
#include "core/diag/error.hpp"

namespace tapestry::search {

namespace {

template <typename Less>
std::size_t best(const std::vector<Evaluated>& front, const std::vector<std::size_t>& candidates,
                 Less less) {
  std::size_t chosen = candidates.front();
  for (std::size_t i : candidates) {
    if (less(front[i].objectives, front[chosen].objectives)) {
      chosen = i;
    }
  }
  return chosen;
}

std::size_t knee(const std::vector<Evaluated>& front, const std::vector<std::size_t>& candidates) {
  const std::size_t fast = best(front, candidates, fasterThan);
  const std::size_t small = best(front, candidates, smallerThan);
  const cost::Objectives& a = front[fast].objectives;
  const cost::Objectives& b = front[small].objectives;
  const double t0 = a.timeS;
  const double t1 = b.timeS;
  const auto m0 = static_cast<double>(b.peakMemoryBytes);
  const auto m1 = static_cast<double>(a.peakMemoryBytes);
  if (!(t1 > t0) || !(m1 > m0)) {
    return fast; // one plan is both fastest and smallest
  }
  // Normalized: the fastest plan is at (0, 1), the smallest at (1, 0); the line
  // between them is x + y = 1, and a point's distance below it is
  // (1 - x - y) / sqrt(2). The largest distance is the knee.
  std::size_t chosen = fast;
  double bestDistance = 0;
  for (std::size_t i : candidates) {
    const cost::Objectives& o = front[i].objectives;
    const double x = (o.timeS - t0) / (t1 - t0);
    const double y = (static_cast<double>(o.peakMemoryBytes) - m0) / (m1 - m0);
    const double distance = (1.0 - x - y) / std::sqrt(2.0);
    if (distance > bestDistance) {
      bestDistance = distance;
      chosen = i;
    }
  }
  return chosen;
}

} // namespace

std::optional<SelectPolicy> parseSelectPolicy(std::string_view name) {
  if (name == "fastest") {
    return SelectPolicy::Fastest;
  }
  if (name == "smallest") {
    return SelectPolicy::Smallest;
  }
  if (name == "knee") {
    return SelectPolicy::Knee;
  }
  if (name == "time") {
    return SelectPolicy::Time;
  }
  return std::nullopt;
}

const char* selectPolicyName(SelectPolicy policy) {
  switch (policy) {
  case SelectPolicy::Fastest:
    return "fastest";
  case SelectPolicy::Smallest:
    return "smallest";
  case SelectPolicy::Knee:
    return "knee";
  case SelectPolicy::Time:
    return "time";
  }
  return "fastest";
}

std::size_t selectPlan(const std::vector<Evaluated>& front, SelectPolicy policy,
                       std::optional<std::int64_t> memoryCap) {
  checkInvariant(!front.empty(), "selectPlan needs a non-empty front");
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < front.size(); ++i) {
    if (!memoryCap || front[i].objectives.peakMemoryBytes <= *memoryCap) {
      candidates.push_back(i);
    }
  }
  if (candidates.empty()) {
    std::int64_t least = front.front().objectives.peakMemoryBytes;
    for (const Evaluated& e : front) {
      least = std::min(least, e.objectives.peakMemoryBytes);
    }
    throw Error("no plan on the front fits under " + cost::formatSize(*memoryCap) +
                " (the smallest needs " + cost::formatSize(least) + ")");
  }
  switch (policy) {
  case SelectPolicy::Smallest:
    return best(front, candidates, smallerThan);
  case SelectPolicy::Knee:
    return knee(front, candidates);
  case SelectPolicy::Fastest:
  case SelectPolicy::Time:
    break;
  }
  return best(front, candidates, fasterThan);
}

std::size_t devicesOf(const plan::PlanChoice& choice) {
  std::vector<int> used;
  for (const plan::OpChoice& op : choice.ops) {
    used.insert(used.end(), op.devices.begin(), op.devices.end());
  }
  std::sort(used.begin(), used.end());
  return static_cast<std::size_t>(std::unique(used.begin(), used.end()) - used.begin());
}

OneDeviceRule oneDeviceRule(const std::vector<Evaluated>& front, std::size_t selected,
                            double singleTime, double spread) {
  OneDeviceRule rule;
  rule.spread = spread;
  const Evaluated& chosen = front.at(selected);
  if (spread <= 0 || devicesOf(chosen.choice) <= 1 || chosen.objectives.timeS <= 0) {
    return rule;
  }
  rule.gain = singleTime / chosen.objectives.timeS;
  if (rule.gain > 1 + spread) {
    return rule;
  }
  rule.applies = true;
  for (std::size_t i = 0; i < front.size(); ++i) {
    if (devicesOf(front[i].choice) == 1 &&
        (!rule.index || fasterThan(front[i].objectives, front[*rule.index].objectives))) {
      rule.index = i;
    }
  }
  return rule;
}

} // namespace tapestry::search
