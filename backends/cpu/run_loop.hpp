// The loop nest of a prepared kernel (backend.hpp's PreparedKernel), worked
// out once from the shard's index box and its operands' walks: every
// operand's offset from its view's data pointer, the innermost run (its
// length and each operand's stride along it) and the outer dims around it.
// Running it only adds the data pointers of the call's views, so a kernel's
// run() does no allocation and no shape arithmetic. Also the chunked
// gather/scatter that lets contiguous vector loops (vector_math.hpp) serve
// strided runs. Not a public header.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

template <std::size_t N> class RunLoop {
public:
  using Offsets = std::array<std::int64_t, N>;
  using Pointers = std::array<std::byte*, N>;

  RunLoop() = default;
  // The box with extents `extent`, operand i walked by walks[i] (from
  // walkThrough or walkRegion on views[i]), with elements of sizes[i] bytes.
  // Dims of extent 1 drop out and dims every operand walks contiguously merge
  // (runDims), so the innermost run is as long as the layouts allow.
  // With `anyOrder` the dims are walked in memory order (runDims).
  RunLoop(std::span<const std::int64_t> extent, const std::array<const Walk*, N>& walks,
          const std::array<const TensorView*, N>& views, const std::array<std::size_t, N>& sizes,
          bool anyOrder = false)
      : sizes_(sizes) {
    std::vector<RunDim<N>> dims;
    if (!runDims<N>(extent, walks, dims, anyOrder)) {
      return; // empty box
    }
    Offsets offsets{};
    for (std::size_t i = 0; i < N; ++i) {
      offsets[i] = (walks[i]->base - views[i]->data) / static_cast<std::int64_t>(sizes[i]);
    }
    RunDim<N> inner{1, {}};
    if (!dims.empty()) {
      inner = dims.back();
      dims.pop_back();
    }
    init(offsets, inner, dims);
  }
  // Explicit dims (strides in elements), all of them outer: each point is a
  // run of length 1 (the tiled transpose walks the dims around its tiles).
  RunLoop(const Offsets& offsets, const std::vector<RunDim<N>>& dims,
          const std::array<std::size_t, N>& sizes)
      : sizes_(sizes) {
    for (const RunDim<N>& d : dims) {
      if (d.extent == 0) {
        return;
      }
    }
    init(offsets, RunDim<N>{1, {}}, dims);
  }

  bool empty() const { return empty_; }
  // The length of each run and operand i's stride along it (in elements).
  std::int64_t length() const { return length_; }
  std::int64_t stride(std::size_t i) const { return stride_[i]; }
  // Whether every operand steps by one element along the runs.
  bool unitStride() const {
    for (std::int64_t s : stride_) {
      if (s != 1 && length_ > 1) {
        return false;
      }
    }
    return true;
  }
  // Whether the last operand (the output) steps by one element.
  bool unitStrideOut() const { return length_ == 1 || stride_[N - 1] == 1; }
  std::int64_t runCount() const {
    std::int64_t count = empty_ ? 0 : 1;
    for (const Outer& o : outer_) {
      count *= o.extent;
    }
    return count;
  }

  // Calls f(at) once per run, at[i] the address of operand i's first element
  // of the run, given each view's data pointer.
  template <class F> void forEach(const Pointers& data, F&& f) const {
    if (empty_) {
      return;
    }
    Pointers at;
    const std::size_t depth = outer_.size();
    if (depth == 0) {
      for (std::size_t i = 0; i < N; ++i) {
        at[i] = data[i] + offset_[i];
      }
      f(at);
      return;
    }
    if (depth == 1) {
      const Outer& o = outer_[0];
      for (std::int64_t e = 0; e < o.extent; ++e) {
        for (std::size_t i = 0; i < N; ++i) {
          at[i] = data[i] + (offset_[i] + e * o.step[i]);
        }
        f(at);
      }
      return;
    }
    // An odometer over the outer dims, last fastest.
    std::int64_t* counter = counter_.data();
    Offsets off = offset_;
    for (std::size_t d = 0; d < depth; ++d) {
      counter[d] = 0;
    }
    while (true) {
      for (std::size_t i = 0; i < N; ++i) {
        at[i] = data[i] + off[i];
      }
      f(at);
      if (!next(counter, off)) {
        return;
      }
    }
  }

  // Whether forRange can walk the loop (at most kMaxOuter outer dims).
  bool rangeable() const { return outer_.size() <= kMaxOuter; }
  // The loop's points in order, run by run: point p is element p % length()
  // of run p / length(). Calls f(at, m) for each piece of a run inside the
  // points [begin, end), at[i] the address of operand i's first element of
  // the piece and m its length. Unlike forEach, it keeps its odometer on the
  // stack, so the threads of a team may each walk their own range at once.
  // Requires rangeable().
  template <class F>
  void forRange(const Pointers& data, std::int64_t begin, std::int64_t end, F&& f) const {
    if (empty_ || begin >= end) {
      return;
    }
    const std::size_t depth = outer_.size();
    std::array<std::int64_t, kMaxOuter> counter{};
    Offsets off = offset_;
    std::int64_t run = begin / length_;
    std::int64_t within = begin % length_;
    for (std::size_t d = depth; d-- > 0;) {
      const Outer& o = outer_[d];
      counter[d] = run % o.extent;
      run /= o.extent;
      for (std::size_t i = 0; i < N; ++i) {
        off[i] += counter[d] * o.step[i];
      }
    }
    std::int64_t left = end - begin;
    Pointers at;
    while (true) {
      const std::int64_t m = std::min(length_ - within, left);
      for (std::size_t i = 0; i < N; ++i) {
        at[i] = data[i] + off[i] + within * stride_[i] * static_cast<std::int64_t>(sizes_[i]);
      }
      f(at, m);
      left -= m;
      if (left <= 0) {
        return;
      }
      within = 0;
      next(counter.data(), off); // end is inside the loop: there is a next run
    }
  }

  static constexpr std::size_t kMaxOuter = 16;

private:
  struct Outer {
    std::int64_t extent;
    Offsets step; // bytes
  };

  // Steps the odometer over the outer dims (last fastest) and the offsets
  // with it to the next run; false after the last run (all back at zero).
  bool next(std::int64_t* counter, Offsets& off) const {
    for (std::size_t d = outer_.size(); d-- > 0;) {
      const Outer& o = outer_[d];
      for (std::size_t i = 0; i < N; ++i) {
        off[i] += o.step[i];
      }
      if (++counter[d] < o.extent) {
        return true;
      }
      for (std::size_t i = 0; i < N; ++i) {
        off[i] -= o.step[i] * o.extent;
      }
      counter[d] = 0;
    }
    return false;
  }

  void init(const Offsets& offsets, const RunDim<N>& inner, const std::vector<RunDim<N>>& dims) {
    for (std::size_t i = 0; i < N; ++i) {
      offset_[i] = offsets[i] * static_cast<std::int64_t>(sizes_[i]);
    }
    length_ = inner.extent;
    stride_ = inner.stride;
    if (length_ == 1) {
      stride_.fill(1); // a run of one element: any stride reads the same, 1 takes the fast paths
    }
    for (const RunDim<N>& d : dims) {
      Outer o{d.extent, {}};
      for (std::size_t i = 0; i < N; ++i) {
        o.step[i] = d.stride[i] * static_cast<std::int64_t>(sizes_[i]);
      }
      outer_.push_back(o);
    }
    counter_.assign(outer_.size(), 0);
    empty_ = false;
  }

  std::array<std::size_t, N> sizes_{};
  Offsets offset_{}; // bytes from each view's data pointer
  std::int64_t length_ = 0;
  Offsets stride_{}; // elements
  std::vector<Outer> outer_;
  // The odometer's counters: scratch of run(), which one thread calls at a time.
  mutable std::vector<std::int64_t> counter_;
  bool empty_ = true;
};

// The loop of a kernel whose operands (views[i], read through ipfs[i]) are
// all walked over the shard's index box, one element per index point; in
// memory order with `anyOrder` (elementwise kernels).
template <std::size_t N>
RunLoop<N> ipfLoop(const KernelCall& call, const std::array<const TensorView*, N>& views,
                   const std::array<const IndexProjection*, N>& ipfs, bool anyOrder = false) {
  std::array<Walk, N> walks;
  std::array<const Walk*, N> walked{};
  std::array<std::size_t, N> sizes{};
  for (std::size_t i = 0; i < N; ++i) {
    walks[i] = walkThrough(*views[i], *ipfs[i], call.index);
    walked[i] = &walks[i];
    sizes[i] = dtypeSize(views[i]->dtype);
  }
  const std::vector<std::int64_t> extent = call.index.shape().vector();
  return RunLoop<N>(extent, walked, views, sizes, anyOrder);
}

// The kernel function of a kernel that is always prepared (its CpuPrepare
// never returns null): prepare, then run once.
template <std::unique_ptr<PreparedKernel> (*Prepare)(const KernelCall&)>
void runPrepared(const KernelCall& call) {
  Prepare(call)->run(call);
}

// Floats per chunk of a strided run gathered for a contiguous vector loop
// (on the stack: 1 KiB per operand).
inline constexpr std::int64_t kChunk = 256;

// f(x, y, m) over a run of n floats read at stride sx and written at stride
// sy, in chunks of at most kChunk: contiguous operands are passed in place,
// strided ones through stack buffers (gathered before, scattered after).
template <class F>
void throughChunks(const float* x, std::int64_t sx, float* y, std::int64_t sy, std::int64_t n,
                   F&& f) {
  if (sx == 1 && sy == 1) {
    f(x, y, n);
    return;
  }
  alignas(64) float bx[kChunk];
  alignas(64) float by[kChunk];
  for (std::int64_t j0 = 0; j0 < n; j0 += kChunk) {
    const std::int64_t m = std::min(kChunk, n - j0);
    const float* xs = x + j0 * sx;
    float* ys = y + j0 * sy;
    if (sx != 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        bx[j] = xs[j * sx];
      }
    }
    f(sx == 1 ? xs : bx, sy == 1 ? ys : by, m);
    if (sy != 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        ys[j * sy] = by[j];
      }
    }
  }
}

} // namespace tapestry::backend::cpu
