#include "backends/cpu/kernel_util.hpp"

#include <cstring>
#include <string>

#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

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
  forEachRun<2>(
      region, {&s, &d},
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
      },
      true);
}

void unsupportedDType(const KernelCall& call, DType dtype) {
  throw Error("backend cpu: kernel " + call.op.kernel + " does not support " + dtypeName(dtype) +
              " (operation " + call.op.name + ")");
}

} // namespace tapestry::backend::cpu
