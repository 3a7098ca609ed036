#include "core/zspace/zpoint.hpp"

#include "core/diag/error.hpp"

namespace tapestry {

std::string formatInts(std::span<const std::int64_t> values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) {
      out += ", ";
    }
    out += std::to_string(values[i]);
  }
  out += ']';
  return out;
}

std::string ZPoint::toString() const {
  return formatInts(coords_);
}

void checkNonNegativeShape(const ZPoint& shape) {
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (shape[d] < 0) {
      throw Error("shape must be non-negative: " + shape.toString() + " has " +
                  std::to_string(shape[d]) + " in dim " + std::to_string(d));
    }
  }
}

} // namespace tapestry
