// JSON forms of the ZSpace types (Loom-compatible), and decoders that report
// every problem as a located error through json::Value.
//
//   ZPoint           [1, 2]
//   ZRange           {"start": [0, 0], "end": [10, 5]}
//   ZMatrix          [[1, 0], [0, 1]]
//   ZAffineMap       {"projection": [[1, 0], [0, 1]], "offset": [0, 0]}
//   IndexProjection  {"affineMap": {...}, "shape": [1, 1]}
//
// A projection with no rows (an IPF onto a rank-0 tensor) cannot show its
// column count. Loom reads `[]` as a 0 x 0 matrix; here the input rank comes
// from, in order: an "inputRank" key of the affine map (written only for such
// maps, so round trips are exact), the caller's expectedInputRank (the index
// rank of the operation the IPF belongs to), else 0 as in Loom. For maps with
// rows, "inputRank" is optional and must equal the row length. "offset" may be
// omitted (zeros), as Loom allows.
#pragma once

#include <cstddef>
#include <optional>

#include "core/json/json.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/zaffine_map.hpp"
#include "core/zspace/zpoint.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry {

Json toJson(const ZPoint& point);
Json toJson(const ZRange& range);
Json toJson(const ZMatrix& matrix);
Json toJson(const ZAffineMap& map);
Json toJson(const IndexProjection& ipf);

ZPoint decodeZPoint(const json::Value& value);
ZRange decodeZRange(const json::Value& value);
// `colsIfNoRows` is the width given to `[]`.
ZMatrix decodeZMatrix(const json::Value& value, std::size_t colsIfNoRows = 0);
// With expectedInputRank, a map of another input rank is an error.
ZAffineMap decodeZAffineMap(const json::Value& value,
                            std::optional<std::size_t> expectedInputRank = std::nullopt);
IndexProjection decodeIndexProjection(const json::Value& value,
                                      std::optional<std::size_t> expectedInputRank = std::nullopt);

} // namespace tapestry
