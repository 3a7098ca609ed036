// ZRange: an immutable half-open box [start, end) of Z^n — the index space of an
// operation, a tensor, or a shard of either. Supports the set operations the
// planner needs (containment, intersection, bounding range) and splitting a
// range into near-equal shards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "core/zspace/zpoint.hpp"

namespace tapestry {

// Ranges are point sets: every range with a zero extent is the same (empty) set.
// Operations that can produce an empty set (intersection, boundingRange of only
// empty ranges) return the canonical empty range of that rank, ZRange::empty(n),
// whose start and end are all zeros; so `a.intersection(b).isEmpty()` and
// `a.intersection(b) == ZRange::empty(n)` agree.
class ZRange {
public:
  ZRange() = default; // rank 0: zr[], holding the single point []
  // Throws Error on rank mismatch or start > end in some dim.
  ZRange(ZPoint start, ZPoint end);

  // [0, shape); throws Error on a negative extent.
  static ZRange fromShape(const ZPoint& shape);
  // [start, start + shape); throws Error on a negative extent or overflow.
  static ZRange fromStartAndShape(const ZPoint& start, const ZPoint& shape);
  // The canonical empty range of a rank (all zeros; see above). Rank 0 has no
  // empty range: the Z^0 box always holds its one point, so rank must be >= 1.
  static ZRange empty(std::size_t rank);

  const ZPoint& start() const { return start_; }
  const ZPoint& end() const { return end_; }
  std::size_t rank() const { return start_.rank(); }
  // end - start; throws Error when an extent overflows int64.
  ZPoint shape() const;
  std::int64_t extent(std::size_t dim) const;
  // Number of points, the checked product of the extents (1 for rank 0).
  std::int64_t size() const;
  bool isEmpty() const;

  // Rank mismatches are Errors.
  bool contains(const ZPoint& point) const;
  // Every point of `other` is in this range; an empty range is in every range.
  bool contains(const ZRange& other) const;
  // The common points; ZRange::empty(rank) when there are none.
  ZRange intersection(const ZRange& other) const;
  // Whether any point is shared (no allocation, unlike intersection).
  bool intersects(const ZRange& other) const;

  // The smallest range holding the points of all given ranges (empty ranges
  // hold none and are ignored; all empty gives ZRange::empty). Needs at least
  // one range, all of one rank.
  static ZRange boundingRange(const ZRange& a, const ZRange& b);
  static ZRange boundingRange(std::span<const ZRange> ranges);
  static ZRange boundingRange(std::initializer_list<ZRange> ranges) {
    return boundingRange(std::span<const ZRange>(ranges.begin(), ranges.size()));
  }

  // `parts` ranges covering this one, cut along `dim` into near-equal pieces:
  // extents differ by at most 1 and the larger pieces come first (numpy's
  // array_split). Needs dim < rank and 1 <= parts <= extent(dim).
  std::vector<ZRange> split(std::size_t dim, std::int64_t parts) const;
  // The grid of splits with partsPerDim[d] pieces along each dim d, in row-major
  // order (the last dim varies fastest). Needs one count per dim.
  std::vector<ZRange> tile(std::span<const std::int64_t> partsPerDim) const;
  std::vector<ZRange> tile(std::initializer_list<std::int64_t> partsPerDim) const {
    return tile(std::span<const std::int64_t>(partsPerDim.begin(), partsPerDim.size()));
  }

  // Row-major iteration over the points (the last dim varies fastest). The
  // iterator refers to the range, which must outlive it.
  class PointIterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ZPoint;
    using difference_type = std::ptrdiff_t;
    using pointer = const ZPoint*;
    using reference = const ZPoint&;

    PointIterator() = default; // the end
    reference operator*() const { return point_; }
    pointer operator->() const { return &point_; }
    PointIterator& operator++();
    PointIterator operator++(int) {
      PointIterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const PointIterator& a, const PointIterator& b) {
      return a.done_ == b.done_ && (a.done_ || a.point_ == b.point_);
    }

  private:
    friend class ZRange;
    explicit PointIterator(const ZRange& range);
    const ZRange* range_ = nullptr;
    ZPoint point_;
    bool done_ = true;
  };
  struct Points {
    const ZRange* range;
    PointIterator begin() const { return PointIterator(*range); }
    PointIterator end() const { return {}; }
  };
  Points points() const { return Points{this}; }

  // Calls f(const ZPoint&) for each point in row-major order; the point is
  // reused between calls, so copy it to keep it.
  template <class F> void forEachPoint(F&& f) const {
    if (isEmpty()) {
      return;
    }
    ZPoint p = start_;
    const std::size_t n = rank();
    while (true) {
      f(static_cast<const ZPoint&>(p));
      // Odometer step; no overflow since p < end <= INT64_MAX.
      std::size_t d = n;
      while (true) {
        if (d == 0) {
          return; // every dim wrapped (or rank 0: the one point is done)
        }
        --d;
        if (++p.coords_[d] < end_.coords_[d]) {
          break;
        }
        p.coords_[d] = start_.coords_[d];
      }
    }
  }

  friend bool operator==(const ZRange&, const ZRange&) = default;
  friend auto operator<=>(const ZRange&, const ZRange&) = default;

  // Loom's form: "zr[0:10, 0:5]"; rank 0 is "zr[]".
  std::string toString() const;

private:
  struct Trusted {};
  // For results already known to be valid (same rank, start <= end).
  ZRange(Trusted, ZPoint start, ZPoint end) : start_(std::move(start)), end_(std::move(end)) {}
  friend class IndexProjection;

  ZPoint start_;
  ZPoint end_;
};

} // namespace tapestry
