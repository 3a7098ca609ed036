#include "core/search/archive.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace tapestry::search {

namespace {

double objective(const cost::Objectives& o, int k) {
  switch (k) {
  case 0:
    return o.timeS;
  case 1:
    return static_cast<double>(o.peakMemoryBytes);
  default:
    return static_cast<double>(o.transferBytes);
  }
}

bool sameObjectives(const cost::Objectives& a, const cost::Objectives& b) {
  return a.timeS == b.timeS && a.peakMemoryBytes == b.peakMemoryBytes &&
         a.transferBytes == b.transferBytes;
}

// Orders by objective First, then Second, then bytes moved.
template <auto First, auto Second>
bool lessInOrder(const cost::Objectives& a, const cost::Objectives& b) {
  if (a.*First != b.*First) {
    return a.*First < b.*First;
  }
  if (a.*Second != b.*Second) {
    return a.*Second < b.*Second;
  }
  return a.transferBytes < b.transferBytes;
}

// Another point is no worse in time and memory and better in one of them.
bool dominatedInTimeAndMemory(const std::vector<cost::Objectives>& points, std::size_t i) {
  const cost::Objectives& p = points[i];
  for (const cost::Objectives& q : points) {
    if (q.timeS <= p.timeS && q.peakMemoryBytes <= p.peakMemoryBytes &&
        (q.timeS < p.timeS || q.peakMemoryBytes < p.peakMemoryBytes)) {
      return true;
    }
  }
  return false;
}

} // namespace

bool fasterThan(const cost::Objectives& a, const cost::Objectives& b) {
  return lessInOrder<&cost::Objectives::timeS, &cost::Objectives::peakMemoryBytes>(a, b);
}

bool smallerThan(const cost::Objectives& a, const cost::Objectives& b) {
  return lessInOrder<&cost::Objectives::peakMemoryBytes, &cost::Objectives::timeS>(a, b);
}

std::vector<double> crowdingDistances(const std::vector<cost::Objectives>& points) {
  const std::size_t n = points.size();
  std::vector<double> distance(n, 0.0);
  if (n <= 2) {
    std::fill(distance.begin(), distance.end(), std::numeric_limits<double>::infinity());
    return distance;
  }
  std::vector<std::size_t> order(n);
  for (int k = 0; k < 3; ++k) {
    std::iota(order.begin(), order.end(), 0);
    // Stable, so equal values keep index order and the result is deterministic.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return objective(points[a], k) < objective(points[b], k);
    });
    const double lo = objective(points[order.front()], k);
    const double hi = objective(points[order.back()], k);
    distance[order.front()] = std::numeric_limits<double>::infinity();
    distance[order.back()] = std::numeric_limits<double>::infinity();
    if (hi <= lo) {
      continue;
    }
    for (std::size_t i = 1; i + 1 < n; ++i) {
      const double gap = objective(points[order[i + 1]], k) - objective(points[order[i - 1]], k);
      distance[order[i]] += gap / (hi - lo);
    }
  }
  return distance;
}

bool ParetoArchive::insert(Evaluated candidate) {
  const cost::Objectives& c = candidate.objectives;
  if (!c.feasible) {
    return false;
  }
  for (const Evaluated& m : members_) {
    if (sameObjectives(m.objectives, c) || cost::dominates(m.objectives, c)) {
      return false;
    }
  }
  std::erase_if(members_, [&](const Evaluated& m) { return cost::dominates(c, m.objectives); });
  members_.push_back(std::move(candidate));
  if (cap_ == 0 || members_.size() <= cap_) {
    return true;
  }
  bool kept = true;
  while (members_.size() > cap_) {
    std::vector<cost::Objectives> points;
    points.reserve(members_.size());
    for (const Evaluated& m : members_) {
      points.push_back(m.objectives);
    }
    std::vector<double> distance = crowdingDistances(points);
    // Plans that only trade bytes moved (dominated in time x memory, the
    // trade-off --select and the pictures show) go first, the most crowded of
    // them; then the most crowded of all. Extremes (infinite distance) stay,
    // and on ties the newest goes, so older plans stay put.
    std::size_t victim = members_.size();
    for (int pass = 0; pass < 2 && victim == members_.size(); ++pass) {
      for (std::size_t i = 0; i < members_.size(); ++i) {
        if (pass == 0 && (std::isinf(distance[i]) || !dominatedInTimeAndMemory(points, i))) {
          continue;
        }
        if (victim == members_.size() || distance[i] <= distance[victim]) {
          victim = i;
        }
      }
    }
    kept = kept && victim + 1 != members_.size();
    members_.erase(members_.begin() + static_cast<std::ptrdiff_t>(victim));
  }
  return kept;
}

std::vector<Evaluated> ParetoArchive::sorted() const {
  std::vector<Evaluated> out = members_;
  std::stable_sort(out.begin(), out.end(), [](const Evaluated& a, const Evaluated& b) {
    return fasterThan(a.objectives, b.objectives);
  });
  return out;
}

} // namespace tapestry::search
