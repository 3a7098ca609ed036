// Strided walks of tensor views over an operation's index points: the one
// address arithmetic the CPU kernels and the CUDA backend's kernel launches
// share (each turns a walk into loops or a DeviceWalk of its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
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

// matmul's shard (index [b..., m, n, k]) as one product of `rows` x K: when W
// is the same matrix at every batch point of the shard (its walk does not move
// along any batch dim of extent > 1: W broadcast, as x[B, S, D] @ W[D, F]) and
// the shard's (b..., m) rows of X and of the result are equally spaced, with
// row strides xRowStride and rRowStride. Walks over `index`, as walkThrough's.
// matmul's shard, index [b..., m, n, k] over X [bx..., m, k] and W [bw...,
// k, n]: how many batch dims the index has (nb) and X and W have (rx, rw), and
// the shard's corner (m0, n0, k0) and extents (M, N, K) of its product.
struct MatmulShard {
  std::size_t nb, rx, rw;
  std::int64_t m0, n0, k0, M, N, K;
};
MatmulShard matmulShard(const KernelCall& call);

struct MergedRows {
  std::int64_t rows = 0;
  std::int64_t xRowStride = 0;
  std::int64_t rRowStride = 0;
};
std::optional<MergedRows> mergeMatmulRows(const ZRange& index, const StrideWalk& x,
                                          const StrideWalk& w, const StrideWalk& r);

} // namespace tapestry::backend
