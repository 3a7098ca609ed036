#include "core/zspace/index_projection.hpp"

#include <algorithm>
#include <span>

#include "core/diag/error.hpp"
#include "core/zspace/wide_int.hpp"

namespace tapestry {

IndexProjection::IndexProjection(ZAffineMap map, ZPoint shape)
    : map_(std::move(map)), shape_(std::move(shape)) {
  if (shape_.rank() != map_.outputRank()) {
    throw Error("rank mismatch: map " + map_.toString() + " has " +
                std::to_string(map_.outputRank()) + " output dims, shape " + shape_.toString() +
                " has " + std::to_string(shape_.rank()));
  }
  checkNonNegativeShape(shape_);
}

IndexProjection IndexProjection::identity(std::size_t n) {
  return IndexProjection(ZAffineMap::identity(n), ZPoint::filled(n, 1));
}

ZRange IndexProjection::apply(const ZPoint& index) const {
  if (index.rank() != inputRank()) {
    throw Error("rank mismatch: " + toString() + " takes " + std::to_string(inputRank()) +
                " index dims, got " + index.toString() + " with " + std::to_string(index.rank()));
  }
  return project(index.coords(), index.coords(), false);
}

ZRange IndexProjection::apply(const ZRange& indexRange) const {
  if (indexRange.rank() != inputRank()) {
    throw Error("rank mismatch: " + toString() + " takes " + std::to_string(inputRank()) +
                " index dims, got " + indexRange.toString() + " with " +
                std::to_string(indexRange.rank()));
  }
  if (indexRange.isEmpty()) {
    throw Error("cannot project the empty index range " + indexRange.toString() +
                ": expected a non-empty range");
  }
  return project(indexRange.start().coords(), indexRange.end().coords(), true);
}

ZRange IndexProjection::project(std::span<const std::int64_t> first,
                                std::span<const std::int64_t> last, bool lastIsExclusive) const {
  // With an exclusive end e > s >= INT64_MIN, the inclusive corner e - 1 cannot overflow.
  const std::int64_t back = lastIsExclusive ? 1 : 0;
  const std::size_t n = inputRank();
  const std::size_t m = outputRank();
  const ZMatrix& p = map_.projection();
  std::vector<std::int64_t> lo(m);
  std::vector<std::int64_t> hi(m);
  for (std::size_t d = 0; d < m; ++d) {
    detail::Int128 a = map_.offset()[d];
    detail::Int128 b = a;
    bool ok = true;
    for (std::size_t k = 0; k < n && ok; ++k) {
      const detail::Int128 x = static_cast<detail::Int128>(p(d, k)) * first[k];
      const detail::Int128 y = static_cast<detail::Int128>(p(d, k)) * (last[k] - back);
      ok = !__builtin_add_overflow(a, std::min(x, y), &a) &&
           !__builtin_add_overflow(b, std::max(x, y), &b);
    }
    ok = ok && !__builtin_add_overflow(b, static_cast<detail::Int128>(shape_[d]), &b);
    if (!ok || !detail::fitsInt64(a) || !detail::fitsInt64(b)) [[unlikely]] {
      const std::string input =
          lastIsExclusive ? ZRange(ZPoint(first), ZPoint(last)).toString() : formatInts(first);
      throw Error("integer overflow: projecting " + input + " through " + toString() +
                  " gives a region outside int64 (output dim " + std::to_string(d) + ")");
    }
    lo[d] = static_cast<std::int64_t>(a);
    hi[d] = static_cast<std::int64_t>(b);
  }
  return ZRange(ZRange::Trusted{}, ZPoint(std::move(lo)), ZPoint(std::move(hi)));
}

std::string IndexProjection::toString() const {
  return "ipf(" + map_.toString() + ", shape=" + shape_.toString() + ")";
}

ZRange shardSelection(const IndexProjection& ipf, const ZRange& index,
                      const std::vector<std::int64_t>& shape) {
  const ZRange bounds = ZRange::fromShape(ZPoint(shape));
  if (index.isEmpty()) {
    return shape.empty() ? bounds : ZRange::empty(shape.size());
  }
  if (shape.empty()) {
    return bounds; // a rank-0 tensor: its one element
  }
  return ipf.apply(index).intersection(bounds);
}

} // namespace tapestry
