#include "core/zspace/zspace_json.hpp"

#include <string>
#include <vector>

namespace tapestry {

namespace {

std::string dims(std::size_t n) {
  return std::to_string(n) + (n == 1 ? " dim" : " dims");
}

} // namespace

Json toJson(const ZPoint& point) {
  Json out = Json::array();
  for (std::int64_t v : point) {
    out.push_back(v);
  }
  return out;
}

Json toJson(const ZRange& range) {
  Json out = Json::object();
  out["start"] = toJson(range.start());
  out["end"] = toJson(range.end());
  return out;
}

Json toJson(const ZMatrix& matrix) {
  Json out = Json::array();
  for (std::size_t r = 0; r < matrix.rows(); ++r) {
    Json row = Json::array();
    for (std::int64_t v : matrix.row(r)) {
      row.push_back(v);
    }
    out.push_back(std::move(row));
  }
  return out;
}

Json toJson(const ZAffineMap& map) {
  Json out = Json::object();
  out["projection"] = toJson(map.projection());
  out["offset"] = toJson(map.offset());
  if (map.outputRank() == 0 && map.inputRank() != 0) {
    out["inputRank"] = map.inputRank();
  }
  return out;
}

Json toJson(const IndexProjection& ipf) {
  Json out = Json::object();
  out["affineMap"] = toJson(ipf.map());
  out["shape"] = toJson(ipf.shape());
  return out;
}

ZPoint decodeZPoint(const json::Value& value) {
  value.expectArray();
  std::vector<std::int64_t> coords;
  coords.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    coords.push_back(value.at(i).asInt64());
  }
  return ZPoint(std::move(coords));
}

ZRange decodeZRange(const json::Value& value) {
  value.expectObject();
  value.expectKeys({"start", "end"});
  const ZPoint start = decodeZPoint(value.member("start"));
  const json::Value endValue = value.member("end");
  const ZPoint end = decodeZPoint(endValue);
  if (start.rank() != end.rank()) {
    endValue.fail("rank mismatch: start has " + dims(start.rank()) + ", end has " +
                  std::to_string(end.rank()));
  }
  for (std::size_t d = 0; d < start.rank(); ++d) {
    if (start[d] > end[d]) {
      endValue.at(d).fail("start " + start.toString() + " > end " + end.toString() + " in dim " +
                          std::to_string(d));
    }
  }
  return ZRange(start, end);
}

ZMatrix decodeZMatrix(const json::Value& value, std::size_t colsIfNoRows) {
  value.expectArray();
  const std::size_t rows = value.size();
  std::size_t cols = colsIfNoRows;
  std::vector<std::int64_t> values;
  for (std::size_t r = 0; r < rows; ++r) {
    const json::Value row = value.at(r);
    row.expectArray();
    if (r == 0) {
      cols = row.size();
      values.reserve(rows * cols);
    } else if (row.size() != cols) {
      row.fail("matrix must be rectangular: row " + std::to_string(r) + " has " +
               std::to_string(row.size()) + " columns, row 0 has " + std::to_string(cols));
    }
    for (std::size_t c = 0; c < row.size(); ++c) {
      values.push_back(row.at(c).asInt64());
    }
  }
  return ZMatrix(rows, cols, std::move(values));
}

ZAffineMap decodeZAffineMap(const json::Value& value,
                            std::optional<std::size_t> expectedInputRank) {
  value.expectObject();
  value.expectKeys({"projection", "offset", "inputRank"});
  const json::Value projectionValue = value.member("projection");
  projectionValue.expectArray();
  const std::size_t rows = projectionValue.size();

  // The input rank of a 0-row map: see the header.
  std::optional<json::Value> declaredValue = value.find("inputRank");
  std::optional<std::size_t> declared;
  if (declaredValue) {
    const std::int64_t n = declaredValue->asInt64();
    if (n < 0) {
      declaredValue->fail("inputRank must be non-negative, got " + std::to_string(n));
    }
    declared = static_cast<std::size_t>(n);
  }
  ZMatrix projection =
      decodeZMatrix(projectionValue, declared.value_or(expectedInputRank.value_or(0)));
  if (declared && projection.cols() != *declared) {
    declaredValue->fail("inputRank " + std::to_string(*declared) +
                        " does not match the projection's " + std::to_string(projection.cols()) +
                        " columns");
  }
  if (expectedInputRank && projection.cols() != *expectedInputRank) {
    const json::Value& where = declaredValue && rows == 0 ? *declaredValue : projectionValue;
    where.fail("rank mismatch: the map takes " + dims(projection.cols()) + ", expected " +
               std::to_string(*expectedInputRank) + " (the index rank)");
  }

  ZPoint offset = ZPoint::zeros(rows);
  if (const auto v = value.find("offset")) {
    offset = decodeZPoint(*v);
    if (offset.rank() != rows) {
      v->fail("rank mismatch: offset has " + dims(offset.rank()) + ", projection has " +
              std::to_string(rows) + (rows == 1 ? " row" : " rows"));
    }
  }
  return ZAffineMap(std::move(projection), std::move(offset));
}

IndexProjection decodeIndexProjection(const json::Value& value,
                                      std::optional<std::size_t> expectedInputRank) {
  value.expectObject();
  value.expectKeys({"affineMap", "shape"});
  ZAffineMap map = decodeZAffineMap(value.member("affineMap"), expectedInputRank);
  const json::Value shapeValue = value.member("shape");
  ZPoint shape = decodeZPoint(shapeValue);
  if (shape.rank() != map.outputRank()) {
    shapeValue.fail("rank mismatch: shape has " + dims(shape.rank()) + ", projection has " +
                    std::to_string(map.outputRank()) + (map.outputRank() == 1 ? " row" : " rows"));
  }
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] < 0) {
      shapeValue.at(d).fail("shape must be non-negative, got " + std::to_string(shape[d]));
    }
  }
  return IndexProjection(std::move(map), std::move(shape));
}

} // namespace tapestry
