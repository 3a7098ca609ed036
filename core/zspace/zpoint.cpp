#include "core/zspace/zpoint.hpp"

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

} // namespace tapestry
