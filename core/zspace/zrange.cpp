#include "core/zspace/zrange.hpp"

#include <algorithm>

#include "core/diag/error.hpp"
#include "core/zspace/checked.hpp"

namespace tapestry {

namespace {

void checkSameRank(const ZRange& a, const ZRange& b) {
  if (a.rank() != b.rank()) {
    throw Error("rank mismatch: " + a.toString() + " has " + std::to_string(a.rank()) + " dims, " +
                b.toString() + " has " + std::to_string(b.rank()));
  }
}

// Validates a split count and returns the extent along `dim`.
std::int64_t checkSplit(const ZRange& range, std::size_t dim, std::int64_t parts) {
  if (dim >= range.rank()) {
    throw Error("cannot split " + range.toString() + " along dim " + std::to_string(dim) +
                ": it has " + std::to_string(range.rank()) + " dims");
  }
  const std::int64_t extent = range.extent(dim);
  if (extent == 0) {
    throw Error("cannot split " + range.toString() + " into " + std::to_string(parts) +
                " parts along dim " + std::to_string(dim) + ": its extent there is 0");
  }
  if (parts < 1 || parts > extent) {
    throw Error("cannot split " + range.toString() + " into " + std::to_string(parts) +
                " parts along dim " + std::to_string(dim) + ": expected 1 to " +
                std::to_string(extent) + " parts (its extent)");
  }
  return extent;
}

// The parts + 1 cut positions of a near-equal split of [lo, lo + extent): the
// first extent % parts pieces are one longer (numpy array_split). All cuts lie
// within [lo, lo + extent], so nothing here overflows.
std::vector<std::int64_t> cuts(std::int64_t lo, std::int64_t extent, std::int64_t parts) {
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(parts) + 1);
  const std::int64_t base = extent / parts;
  const std::int64_t longer = extent % parts;
  std::int64_t pos = lo;
  out.push_back(pos);
  for (std::int64_t i = 0; i < parts; ++i) {
    pos += base + (i < longer ? 1 : 0);
    out.push_back(pos);
  }
  return out;
}

} // namespace

ZRange::ZRange(ZPoint start, ZPoint end) : start_(std::move(start)), end_(std::move(end)) {
  if (start_.rank() != end_.rank()) {
    throw Error("rank mismatch: start has " + std::to_string(start_.rank()) + " dims, end has " +
                std::to_string(end_.rank()));
  }
  for (std::size_t d = 0; d < start_.rank(); ++d) {
    if (start_[d] > end_[d]) {
      throw Error("start " + start_.toString() + " > end " + end_.toString() + " in dim " +
                  std::to_string(d));
    }
  }
}

ZRange ZRange::fromShape(const ZPoint& shape) {
  checkNonNegativeShape(shape);
  return ZRange(Trusted{}, ZPoint::zeros(shape.rank()), shape);
}

ZRange ZRange::fromStartAndShape(const ZPoint& start, const ZPoint& shape) {
  if (start.rank() != shape.rank()) {
    throw Error("rank mismatch: start has " + std::to_string(start.rank()) + " dims, shape has " +
                std::to_string(shape.rank()));
  }
  checkNonNegativeShape(shape);
  std::vector<std::int64_t> end(start.rank());
  for (std::size_t d = 0; d < start.rank(); ++d) {
    end[d] = checkedAdd(start[d], shape[d]);
  }
  return ZRange(Trusted{}, start, ZPoint(std::move(end)));
}

ZRange ZRange::empty(std::size_t rank) {
  checkInvariant(rank > 0, "ZRange::empty needs rank >= 1 (rank 0 has no empty range)");
  return ZRange(Trusted{}, ZPoint::zeros(rank), ZPoint::zeros(rank));
}

ZPoint ZRange::shape() const {
  std::vector<std::int64_t> out(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    out[d] = checkedSub(end_[d], start_[d]);
  }
  return ZPoint(std::move(out));
}

std::int64_t ZRange::extent(std::size_t dim) const {
  if (dim >= rank()) {
    throw Error("dim " + std::to_string(dim) + " is out of range for " + toString() + " with " +
                std::to_string(rank()) + " dims");
  }
  return checkedSub(end_[dim], start_[dim]);
}

std::int64_t ZRange::size() const {
  // Checked before multiplying: an empty range has size 0 even when the
  // product of its other extents would overflow.
  if (isEmpty()) {
    return 0;
  }
  std::int64_t out = 1;
  for (std::size_t d = 0; d < rank(); ++d) {
    out = checkedMul(out, checkedSub(end_[d], start_[d]));
  }
  return out;
}

bool ZRange::isEmpty() const {
  for (std::size_t d = 0; d < rank(); ++d) {
    if (start_[d] == end_[d]) {
      return true;
    }
  }
  return false;
}

bool ZRange::contains(const ZPoint& point) const {
  if (point.rank() != rank()) {
    throw Error("rank mismatch: " + toString() + " has " + std::to_string(rank()) +
                " dims, point " + point.toString() + " has " + std::to_string(point.rank()));
  }
  for (std::size_t d = 0; d < rank(); ++d) {
    if (point[d] < start_[d] || point[d] >= end_[d]) {
      return false;
    }
  }
  return true;
}

bool ZRange::contains(const ZRange& other) const {
  checkSameRank(*this, other);
  if (other.isEmpty()) {
    return true;
  }
  for (std::size_t d = 0; d < rank(); ++d) {
    if (other.start_[d] < start_[d] || other.end_[d] > end_[d]) {
      return false;
    }
  }
  return true;
}

ZRange ZRange::intersection(const ZRange& other) const {
  checkSameRank(*this, other);
  std::vector<std::int64_t> lo(rank());
  std::vector<std::int64_t> hi(rank());
  for (std::size_t d = 0; d < rank(); ++d) {
    lo[d] = std::max(start_[d], other.start_[d]);
    hi[d] = std::min(end_[d], other.end_[d]);
    if (lo[d] >= hi[d]) {
      return empty(rank());
    }
  }
  return ZRange(Trusted{}, ZPoint(std::move(lo)), ZPoint(std::move(hi)));
}

bool ZRange::intersects(const ZRange& other) const {
  checkSameRank(*this, other);
  for (std::size_t d = 0; d < rank(); ++d) {
    if (std::max(start_[d], other.start_[d]) >= std::min(end_[d], other.end_[d])) {
      return false;
    }
  }
  return true;
}

ZRange ZRange::boundingRange(const ZRange& a, const ZRange& b) {
  checkSameRank(a, b);
  if (b.isEmpty()) {
    return a.isEmpty() ? empty(a.rank()) : a;
  }
  if (a.isEmpty()) {
    return b;
  }
  std::vector<std::int64_t> lo(a.rank());
  std::vector<std::int64_t> hi(a.rank());
  for (std::size_t d = 0; d < a.rank(); ++d) {
    lo[d] = std::min(a.start_[d], b.start_[d]);
    hi[d] = std::max(a.end_[d], b.end_[d]);
  }
  return ZRange(Trusted{}, ZPoint(std::move(lo)), ZPoint(std::move(hi)));
}

ZRange ZRange::boundingRange(std::span<const ZRange> ranges) {
  if (ranges.empty()) {
    throw Error("cannot take the bounding range of no ranges: expected at least one");
  }
  const ZRange* first = nullptr;
  std::vector<std::int64_t> lo;
  std::vector<std::int64_t> hi;
  for (const ZRange& r : ranges) {
    checkSameRank(ranges[0], r);
    if (r.isEmpty()) {
      continue;
    }
    if (first == nullptr) {
      first = &r;
      lo = r.start_.vector();
      hi = r.end_.vector();
      continue;
    }
    for (std::size_t d = 0; d < r.rank(); ++d) {
      lo[d] = std::min(lo[d], r.start_[d]);
      hi[d] = std::max(hi[d], r.end_[d]);
    }
  }
  if (first == nullptr) {
    return empty(ranges[0].rank());
  }
  return ZRange(Trusted{}, ZPoint(std::move(lo)), ZPoint(std::move(hi)));
}

std::vector<ZRange> ZRange::split(std::size_t dim, std::int64_t parts) const {
  const std::int64_t extent = checkSplit(*this, dim, parts);
  const std::vector<std::int64_t> at = cuts(start_[dim], extent, parts);
  std::vector<ZRange> out;
  out.reserve(static_cast<std::size_t>(parts));
  for (std::size_t i = 0; i + 1 < at.size(); ++i) {
    ZPoint s = start_;
    ZPoint e = end_;
    s.coords_[dim] = at[i];
    e.coords_[dim] = at[i + 1];
    out.push_back(ZRange(Trusted{}, std::move(s), std::move(e)));
  }
  return out;
}

std::vector<ZRange> ZRange::tile(std::span<const std::int64_t> partsPerDim) const {
  if (partsPerDim.size() != rank()) {
    throw Error("cannot tile " + toString() + " with " + std::to_string(partsPerDim.size()) +
                " part counts " + formatInts(partsPerDim) + ": expected " + std::to_string(rank()) +
                " (one per dim)");
  }
  const std::size_t n = rank();
  std::vector<std::vector<std::int64_t>> at(n);
  std::int64_t total = 1;
  for (std::size_t d = 0; d < n; ++d) {
    const std::int64_t extent = checkSplit(*this, d, partsPerDim[d]);
    at[d] = cuts(start_[d], extent, partsPerDim[d]);
    total = checkedMul(total, partsPerDim[d]);
  }
  std::vector<ZRange> out;
  out.reserve(static_cast<std::size_t>(total));
  // Odometer over grid cells, last dim fastest.
  std::vector<std::size_t> cell(n, 0);
  while (true) {
    std::vector<std::int64_t> s(n);
    std::vector<std::int64_t> e(n);
    for (std::size_t d = 0; d < n; ++d) {
      s[d] = at[d][cell[d]];
      e[d] = at[d][cell[d] + 1];
    }
    out.push_back(ZRange(Trusted{}, ZPoint(std::move(s)), ZPoint(std::move(e))));
    std::size_t d = n;
    while (true) {
      if (d == 0) {
        return out;
      }
      --d;
      if (++cell[d] + 1 < at[d].size()) {
        break;
      }
      cell[d] = 0;
    }
  }
}

ZRange::PointIterator::PointIterator(const ZRange& range)
    : range_(&range), point_(range.start_), done_(range.isEmpty()) {}

ZRange::PointIterator& ZRange::PointIterator::operator++() {
  checkInvariant(!done_, "ZRange::PointIterator incremented past the end");
  // Odometer step, as forEachPoint; p < end <= INT64_MAX so ++ cannot overflow.
  std::size_t d = point_.rank();
  while (true) {
    if (d == 0) {
      done_ = true;
      return *this;
    }
    --d;
    if (++point_.coords_[d] < range_->end_[d]) {
      return *this;
    }
    point_.coords_[d] = range_->start_[d];
  }
}

std::string ZRange::toString() const {
  std::string out = "zr[";
  for (std::size_t d = 0; d < rank(); ++d) {
    if (d > 0) {
      out += ", ";
    }
    out += std::to_string(start_[d]) + ":" + std::to_string(end_[d]);
  }
  out += ']';
  return out;
}

} // namespace tapestry
