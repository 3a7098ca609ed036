// Data movement: transpose, slice, reshape, cast, concat, split. Each is a copy of the
// shard's index points from the input walk to the output walk (the IPFs say
// where each point lives in each tensor); list ports copy only the part of the
// shard that falls inside each element, which may be none.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

namespace {

// A transposing copy: dim `out` is contiguous in the destination and dim `in`
// in the source (both of `dims`, which the copy walks). Copies in square tiles
// of those two dims, so that each cache line read or written is used whole
// while it is in cache; one element at a time along the innermost dim of a
// transpose reads a new line per element (heads' k^T ran at 2 GB/s).
template <class T>
void copyTiles(std::vector<RunDim<2>> dims, std::size_t out, std::size_t in, const Walk& src,
               const Walk& dst) {
  constexpr std::int64_t kTile = 64 / sizeof(T) < 8 ? 8 : 64 / sizeof(T);
  const RunDim<2> o = dims[out];
  const RunDim<2> i = dims[in];
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(std::max(out, in)));
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(std::min(out, in)));
  const T* from = src.ptr<const T>();
  T* to = dst.ptr<T>();
  forEachOffset<2>(dims, [&](const std::array<std::int64_t, 2>& off) {
    for (std::int64_t a0 = 0; a0 < i.extent; a0 += kTile) {
      const std::int64_t a1 = std::min(i.extent, a0 + kTile);
      for (std::int64_t b0 = 0; b0 < o.extent; b0 += kTile) {
        const std::int64_t b1 = std::min(o.extent, b0 + kTile);
        for (std::int64_t a = a0; a < a1; ++a) {
          const T* s = from + off[0] + a * i.stride[0];
          T* d = to + off[1] + a * i.stride[1];
          for (std::int64_t b = b0; b < b1; ++b) {
            d[b] = s[b * o.stride[0]]; // o.stride[1] == 1
          }
        }
      }
    }
  });
}

// The tiled copy where it applies: one walked dim is contiguous in the
// destination, another in the source. False when it does not apply (the
// caller copies runs).
bool copyTransposed(const ZRange& index, const Walk& src, const Walk& dst,
                    std::size_t elementSize) {
  std::vector<RunDim<2>> dims;
  const std::vector<std::int64_t> extent = index.shape().vector();
  if (!runDims<2>(std::span<const std::int64_t>(extent), {&src, &dst}, dims)) {
    return false;
  }
  std::size_t out = dims.size();
  std::size_t in = dims.size();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    out = dims[k].stride[1] == 1 ? k : out;
    in = dims[k].stride[0] == 1 ? k : in;
  }
  if (out == dims.size() || in == dims.size() || in == out) {
    return false;
  }
  using Copy = void (*)(std::vector<RunDim<2>>, std::size_t, std::size_t, const Walk&, const Walk&);
  // By element size, 1, 2, 4 or 8 bytes (a bitwise copy).
  static constexpr Copy kBySize[9] = {nullptr,
                                      &copyTiles<std::uint8_t>,
                                      &copyTiles<std::uint16_t>,
                                      nullptr,
                                      &copyTiles<std::uint32_t>,
                                      nullptr,
                                      nullptr,
                                      nullptr,
                                      &copyTiles<std::uint64_t>};
  if (elementSize > 8 || kBySize[elementSize] == nullptr) {
    return false;
  }
  kBySize[elementSize](std::move(dims), out, in, src, dst);
  return true;
}

// Copies one element per index point of `index` (bitwise, same dtype).
void copyPoints(const ZRange& index, const Walk& src, const Walk& dst, std::size_t elementSize) {
  if (copyTransposed(index, src, dst, elementSize)) {
    return;
  }
  const auto size = static_cast<std::int64_t>(elementSize);
  forEachRun<2>(index, {&src, &dst},
                [&](const std::array<std::int64_t, 2>& off, std::int64_t n,
                    const std::array<std::int64_t, 2>& st) {
                  const std::byte* from = src.base + off[0] * size;
                  std::byte* to = dst.base + off[1] * size;
                  if (st[0] == 1 && st[1] == 1) {
                    std::memcpy(to, from, static_cast<std::size_t>(n * size));
                    return;
                  }
                  for (std::int64_t j = 0; j < n; ++j) {
                    std::memcpy(to + j * st[1] * size, from + j * st[0] * size, elementSize);
                  }
                });
}

// One input, one output, both with unit-shape IPFs.
void copyKernel(const KernelCall& call) {
  const TensorView& in = call.inputs[0][0];
  const TensorView& out = call.outputs[0][0];
  copyPoints(call.index, walkThrough(in, inputIpf(call, 0), call.index),
             walkThrough(out, outputIpf(call, 0), call.index), dtypeSize(in.dtype));
}

bool unitShape(const IndexProjection& ipf) {
  for (std::int64_t e : ipf.shape()) {
    if (e != 1) {
      return false;
    }
  }
  return true;
}

void reshapeKernel(const KernelCall& call) {
  if (unitShape(inputIpf(call, 0)) && unitShape(outputIpf(call, 0))) {
    copyKernel(call); // the common refinement: a point is one element of each
    return;
  }
  // The single-point fallback: both views hold whole tensors; copy through a
  // dense row-major buffer, which is the same elements in both shapes.
  const TensorView& in = call.inputs[0][0];
  const TensorView& out = call.outputs[0][0];
  const auto& inShape = call.op.application.inputs[0].tensors[0].shape;
  const auto& outShape = call.op.application.outputs[0].tensors[0].shape;
  const ZRange inBounds = ZRange::fromShape(ZPoint(inShape));
  const ZRange outBounds = ZRange::fromShape(ZPoint(outShape));
  Buffer dense = Buffer::host(in.dtype, inBounds);
  copyViews(in, dense.view(), inBounds);
  TensorView flat;
  flat.data = dense.data();
  flat.dtype = in.dtype;
  flat.region = outBounds;
  flat.strides = rowMajorStrides(outShape);
  copyViews(flat, out, outBounds);
}

template <class From, class To> void castTyped(const KernelCall& call) {
  mapElements<From, To>(call, [](From x) { return convertValue<To, From>(x); });
}

void castKernel(const KernelCall& call) {
  dispatchWithBool(call.inputs[0][0].dtype, [&](auto from) {
    dispatchWithBool(call.outputs[0][0].dtype, [&](auto to) {
      castTyped<typename decltype(from)::type, typename decltype(to)::type>(call);
    });
  });
}

// concat: index = the result shape; element j covers [offset_j, offset_j + size_j)
// of the axis.
void concatKernel(const KernelCall& call) {
  const TensorView& out = call.outputs[0][0];
  forEachAxisPart(call, "sizes", [&](std::size_t j, const ZRange& part) {
    copyPoints(part, walkThrough(call.inputs[0][j], inputIpf(call, 0, j), part),
               walkThrough(out, outputIpf(call, 0), part), dtypeSize(out.dtype));
  });
}

// split: index = the input shape; result j holds [offset_j, offset_j + sections_j).
void splitKernel(const KernelCall& call) {
  const TensorView& in = call.inputs[0][0];
  forEachAxisPart(call, "sections", [&](std::size_t j, const ZRange& part) {
    copyPoints(part, walkThrough(in, inputIpf(call, 0), part),
               walkThrough(call.outputs[0][j], outputIpf(call, 0, j), part), dtypeSize(in.dtype));
  });
}

} // namespace

void registerShapeKernels(CpuRegistry& registry) {
  registry.add("transpose", &copyKernel);
  registry.add("slice", &copyKernel); // the input IPF is offset by starts
  registry.add("reshape", &reshapeKernel);
  registry.add("cast", &castKernel);
  registry.add("concat", &concatKernel);
  registry.add("split", &splitKernel);
}

} // namespace tapestry::backend::cpu
