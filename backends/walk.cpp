#include "backends/walk.hpp"

namespace tapestry::backend {

StrideWalk walkThrough(const TensorView& view, const IndexProjection& ipf, const ZRange& index) {
  const ZMatrix& P = ipf.map().projection();
  const ZPoint& b = ipf.map().offset();
  const std::size_t rank = view.strides.size();
  StrideWalk w;
  w.stride.assign(index.rank(), 0);
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    std::int64_t coord = b[d];
    for (std::size_t k = 0; k < index.rank(); ++k) {
      coord += P(d, k) * index.start()[k];
      w.stride[k] += view.strides[d] * P(d, k);
    }
    offset += (coord - view.region.start()[d]) * view.strides[d];
  }
  w.base = view.data + offset * static_cast<std::int64_t>(dtypeSize(view.dtype));
  return w;
}

StrideWalk walkRegion(const TensorView& view, const ZRange& region) {
  StrideWalk w;
  w.stride = view.strides;
  w.base = view.data + view.offsetOf(region.start().coords()) *
                           static_cast<std::int64_t>(dtypeSize(view.dtype));
  return w;
}

StrideWalk walkDense(std::byte* data, std::span<const std::int64_t> extent) {
  return StrideWalk{data, rowMajorStrides(extent)};
}

} // namespace tapestry::backend
