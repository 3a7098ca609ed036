// Strided walks of tensor views over an operation's index points: the one
// address arithmetic the CPU kernels and the CUDA backend's kernel launches
// share (each turns a walk into loops or a DeviceWalk of its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.hpp"
#include "core/zspace/index_projection.hpp"
#include "core/zspace/zrange.hpp"

namespace tapestry::backend {

// How a view is read while walking an index range: the element of index point
// p sits at base + Σ_k stride[k]·(p_k - index.start_k) elements.
struct StrideWalk {
  std::byte* base = nullptr;
  std::vector<std::int64_t> stride; // per index dim
  template <class T> T* ptr() const { return reinterpret_cast<T*>(base); }
};

// A view read through an IPF (unit shape, or the region's first element for
// row-reading kernels) over `index`; index.start must map inside the view.
StrideWalk walkThrough(const TensorView& view, const IndexProjection& ipf, const ZRange& index);
// A view walked over its own coordinates (`region` inside the view).
StrideWalk walkRegion(const TensorView& view, const ZRange& region);
// A dense row-major buffer of `extent` walked from its first element.
StrideWalk walkDense(std::byte* data, std::span<const std::int64_t> extent);

} // namespace tapestry::backend
