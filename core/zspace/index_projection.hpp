// IndexProjection (IPF): maps points and ranges of an operation's index space
// to the tensor regions they touch. Sharding an operation = projecting each
// shard's index range through the IPF of every input and output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/zspace/zaffine_map.hpp"
#include "core/zspace/zpoint.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry {

// An affine map plus a shape (Loom's ZRangeProjectionMap). Index point i maps
// to the tensor region [P·i + b, P·i + b + shape); an index range maps to the
// union of its points' regions, which is itself a box (see apply).
class IndexProjection {
public:
  // Throws Error when shape.rank() != map.outputRank() or an extent is negative.
  IndexProjection(ZAffineMap map, ZPoint shape);
  // The identity map on Z^n with a unit shape: each index point maps to itself.
  static IndexProjection identity(std::size_t n);

  const ZAffineMap& map() const { return map_; }
  const ZPoint& shape() const { return shape_; }
  std::size_t inputRank() const { return map_.inputRank(); }
  std::size_t outputRank() const { return map_.outputRank(); }

  // [P·i + b, P·i + b + shape). Errors: rank mismatch, int64 overflow.
  ZRange apply(const ZPoint& index) const;
  // The union of the regions of the points of a non-empty range [s, e), per
  // out dim d: start_d = b_d + Σ_k min(P_dk·s_k, P_dk·(e_k−1)),
  //            end_d = b_d + Σ_k max(P_dk·s_k, P_dk·(e_k−1)) + shape_d.
  // Exact for mixed signs. Errors: empty range, rank mismatch, int64 overflow.
  ZRange apply(const ZRange& indexRange) const;

  friend bool operator==(const IndexProjection&, const IndexProjection&) = default;

  // "ipf(λx.[[1, 0], [0, 1]]⋅x + [0, 0], shape=[1, 1])".
  std::string toString() const;

private:
  // The region of the index box from `first` to `last` (inclusive, or exclusive
  // when lastIsExclusive); ranks already checked.
  ZRange project(std::span<const std::int64_t> first, std::span<const std::int64_t> last,
                 bool lastIsExclusive) const;

  ZAffineMap map_;
  ZPoint shape_;
};

using IPF = IndexProjection;

// A tensor's selection for a shard (SPEC §9): ipf(index) ∩ [0, shape). Empty
// for an empty index (a rank-0 tensor keeps its one element); a rank-0 tensor
// is always wholly selected.
ZRange shardSelection(const IndexProjection& ipf, const ZRange& index,
                      const std::vector<std::int64_t>& shape);

} // namespace tapestry
