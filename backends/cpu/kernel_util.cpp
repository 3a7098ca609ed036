#include "backends/cpu/kernel_util.hpp"

#include <cstring>
#include <string>

#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

Walk walkThrough(const TensorView& view, const IndexProjection& ipf, const ZRange& index) {
  const ZMatrix& P = ipf.map().projection();
  const ZPoint& b = ipf.map().offset();
  const std::size_t rank = view.strides.size();
  Walk w;
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

Walk walkRegion(const TensorView& view, const ZRange& region) {
  Walk w;
  w.stride = view.strides;
  w.base = view.data + view.offsetOf(region.start().coords()) *
                           static_cast<std::int64_t>(dtypeSize(view.dtype));
  return w;
}

Walk walkDense(std::byte* data, std::span<const std::int64_t> extent) {
  return Walk{data, rowMajorStrides(extent)};
}

void copyViews(const TensorView& src, const TensorView& dst, const ZRange& region) {
  if (region.isEmpty()) {
    return;
  }
  if (src.dtype != dst.dtype) {
    throw InternalError("copy between views of different dtypes: " + src.toString() + " to " +
                        dst.toString());
  }
  if (!src.region.contains(region) || !dst.region.contains(region)) {
    throw InternalError("copy of " + region.toString() + " from " + src.toString() + " to " +
                        dst.toString() + ": a view does not cover the region");
  }
  const Walk s = walkRegion(src, region);
  const Walk d = walkRegion(dst, region);
  const auto size = static_cast<std::int64_t>(dtypeSize(src.dtype));
  forEachRun<2>(region, {&s, &d},
                [&](const std::array<std::int64_t, 2>& off, std::int64_t n,
                    const std::array<std::int64_t, 2>& st) {
                  std::byte* from = s.base + off[0] * size;
                  std::byte* to = d.base + off[1] * size;
                  if (st[0] == 1 && st[1] == 1) {
                    std::memmove(to, from, static_cast<std::size_t>(n * size));
                    return;
                  }
                  for (std::int64_t j = 0; j < n; ++j) {
                    std::memcpy(to + j * st[1] * size, from + j * st[0] * size,
                                static_cast<std::size_t>(size));
                  }
                });
}

void unsupportedDType(const KernelCall& call, DType dtype) {
  throw Error("backend cpu: kernel " + call.op.kernel + " does not support " + dtypeName(dtype) +
              " (operation " + call.op.name + ")");
}

} // namespace tapestry::backend::cpu
