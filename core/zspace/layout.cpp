#include "core/zspace/layout.hpp"

#include <algorithm>
#include <string>

#include "core/diag/error.hpp"
#include "core/zspace/checked.hpp"

namespace tapestry {

std::vector<std::int64_t> rowMajorStrides(std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  std::int64_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride = checkedMul(stride, std::max<std::int64_t>(shape[d], 1));
  }
  return strides;
}

std::array<std::int64_t, 4> channelsLastStrides4(std::span<const std::int64_t, 4> shape) {
  auto extent = [&](std::size_t d) { return std::max<std::int64_t>(shape[d], 1); };
  std::array<std::int64_t, 4> strides{};
  strides[1] = 1;
  strides[3] = extent(1);
  strides[2] = checkedMul(strides[3], extent(3));
  strides[0] = checkedMul(strides[2], extent(2));
  return strides;
}

std::vector<std::int64_t> channelsLastStrides(std::span<const std::int64_t> shape) {
  if (shape.size() != 4) {
    throw InternalError("channels-last strides of a " + std::to_string(shape.size()) + "-d box");
  }
  const std::array<std::int64_t, 4> strides = channelsLastStrides4(shape.first<4>());
  return {strides.begin(), strides.end()};
}

bool blockAlong(std::span<const std::int64_t> extents, std::span<const std::int64_t> shape,
                std::span<const std::int64_t> strides, std::size_t d) {
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (k == d || shape[k] == 1) {
      continue;
    }
    if (strides[k] > strides[d] ? extents[k] != 1 : extents[k] != shape[k]) {
      return false;
    }
  }
  return true;
}

} // namespace tapestry
