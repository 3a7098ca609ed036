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

std::optional<MergedRows> mergeMatmulRows(const ZRange& index, const StrideWalk& x,
                                          const StrideWalk& w, const StrideWalk& r) {
  const std::size_t nb = index.rank() - 3; // batch dims; dim nb is m
  MergedRows merged{index.extent(nb), x.stride[nb], r.stride[nb]};
  for (std::size_t d = nb; d-- > 0;) {
    const std::int64_t extent = index.extent(d);
    if (extent == 1) {
      continue;
    }
    if (w.stride[d] != 0) {
      return std::nullopt;
    }
    if (merged.rows == 1) {
      merged = MergedRows{extent, x.stride[d], r.stride[d]};
    } else if (x.stride[d] == merged.xRowStride * merged.rows &&
               r.stride[d] == merged.rRowStride * merged.rows) {
      merged.rows *= extent;
    } else {
      return std::nullopt;
    }
  }
  return merged;
}

MatmulShard matmulShard(const KernelCall& call) {
  const ZRange& idx = call.index;
  const std::size_t nb = idx.rank() - 3;
  return MatmulShard{nb,
                     call.inputs[0][0].rank() - 2,
                     call.inputs[1][0].rank() - 2,
                     idx.start()[nb],
                     idx.start()[nb + 1],
                     idx.start()[nb + 2],
                     idx.extent(nb),
                     idx.extent(nb + 1),
                     idx.extent(nb + 2)};
}

} // namespace tapestry::backend
