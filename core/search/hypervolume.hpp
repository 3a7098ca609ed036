// Hypervolume of a front in (time, peak memory): the area of the region the
// front dominates, bounded by a reference point. The quality measure of the
// search tests and of bench_search (how close a front is to the true one).
#pragma once

#include <vector>

#include "core/search/archive.hpp"

namespace tapestry::search {

struct Point2 {
  double x = 0; // time (s)
  double y = 0; // peak memory (bytes)
};

// The area dominated by `points` inside [.., ref.x) x [.., ref.y): the union of
// the boxes [x, ref.x) x [y, ref.y). Points not strictly below the reference in
// both coordinates add nothing. Exact up to floating-point rounding.
double hypervolume2d(std::vector<Point2> points, Point2 ref);

// The (time, peak memory) points of evaluated plans (feasible ones only).
std::vector<Point2> timeMemoryPoints(const std::vector<Evaluated>& plans);

} // namespace tapestry::search
