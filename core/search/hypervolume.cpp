#include "core/search/hypervolume.hpp"

#include <algorithm>

namespace tapestry::search {

double hypervolume2d(std::vector<Point2> points, Point2 ref) {
  std::erase_if(points, [&](const Point2& p) { return !(p.x < ref.x && p.y < ref.y); });
  std::sort(points.begin(), points.end(),
            [](const Point2& a, const Point2& b) { return a.x != b.x ? a.x < b.x : a.y < b.y; });
  // Sweep by increasing x: each point that lowers the best y so far adds the
  // strip between the old and the new best y, from its x to ref.x.
  double area = 0;
  double bestY = ref.y;
  for (const Point2& p : points) {
    if (p.y < bestY) {
      area += (ref.x - p.x) * (bestY - p.y);
      bestY = p.y;
    }
  }
  return area;
}

std::vector<Point2> timeMemoryPoints(const std::vector<Evaluated>& plans) {
  std::vector<Point2> out;
  out.reserve(plans.size());
  for (const Evaluated& e : plans) {
    if (e.objectives.feasible) {
      out.push_back(Point2{e.objectives.timeS, static_cast<double>(e.objectives.peakMemoryBytes)});
    }
  }
  return out;
}

} // namespace tapestry::search
