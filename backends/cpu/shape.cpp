// Data movement: transpose, slice, reshape, cast, concat, split. Each is a copy of the
// shard's index points from the input walk to the output walk (the IPFs say
// where each point lives in each tensor); list ports copy only the part of the
// shard that falls inside each element, which may be none. Each call is
// prepared once (run_loop.hpp): its runs or transpose tiles are worked out
// then, and run() only copies.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/team.hpp"
#include "backends/cpu/vector_math.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

// The smallest tile (elements) a transpose copies as a tile, the runs below
// which a copy goes by blocks instead, and a block's most elements
// (CopyPlan::pickBlock).
inline constexpr std::int64_t kMinTile = 64;
inline constexpr std::int64_t kShortRun = 16;
inline constexpr std::int64_t kBlock = 256;

// A transposing copy: dim `out` is contiguous in the destination and dim `in`
// in the source. Copies in square tiles of those two dims, so that each cache
// line read or written is used whole while it is in cache; one element at a
// time along the innermost dim of a transpose reads a new line per element
// (heads' k^T ran at 2 GB/s). 1- and 2-byte elements; wider ones go through
// the vector unit's register tiles (VectorKernels::transpose4, 4x faster).
template <class E> void copyTiles(const RunDim<2>& o, const RunDim<2>& i, const E* from, E* to) {
  constexpr std::int64_t kTile = 64 / sizeof(E) < 8 ? 8 : 64 / sizeof(E);
  for (std::int64_t a0 = 0; a0 < i.extent; a0 += kTile) {
    const std::int64_t a1 = std::min(i.extent, a0 + kTile);
    for (std::int64_t b0 = 0; b0 < o.extent; b0 += kTile) {
      const std::int64_t b1 = std::min(o.extent, b0 + kTile);
      for (std::int64_t a = a0; a < a1; ++a) {
        const E* s = from + a * i.stride[0];
        E* d = to + a * i.stride[1];
        for (std::int64_t b = b0; b < b1; ++b) {
          d[b] = s[b * o.stride[0]]; // o.stride[1] == 1
        }
      }
    }
  }
}

// A run of n elements at strides (in elements) ss and ds.
template <class E>
void copyRun(const std::byte* from, std::int64_t ss, std::byte* to, std::int64_t ds,
             std::int64_t n) {
  if (ss == 1 && ds == 1) {
    std::memcpy(to, from, static_cast<std::size_t>(n) * sizeof(E));
    return;
  }
  const E* s = reinterpret_cast<const E*>(from);
  E* d = reinterpret_cast<E*>(to);
  for (std::int64_t j = 0; j < n; ++j) {
    d[j * ds] = s[j * ss];
  }
}

// The copy of one element per index point of a box from one walk to another
// (bitwise, one dtype), worked out once: tiles where one walked dim is
// contiguous in the destination and another in the source (a transpose),
// runs otherwise.
class CopyPlan {
public:
  CopyPlan(const ZRange& box, const Walk& src, const Walk& dst, const TensorView& srcView,
           const TensorView& dstView, std::size_t elementSize) {
    const std::vector<std::int64_t> extent = box.shape().vector();
    const std::array<std::size_t, 2> sizes{elementSize, elementSize};
    std::vector<RunDim<2>> dims;
    bool found = runDims<2>(std::span<const std::int64_t>(extent), {&src, &dst}, dims);
    // A dim contiguous in both walks but not the innermost of the index (a
    // channel slice of a channels-last image: DenseNet's concatenations)
    // goes innermost: the copy's points are independent, so memory order
    // serves, in runs of whole channel rows rather than one element apart.
    const bool memoryOrder = found && !dims.empty() && !isUnit(dims.back()) &&
                             std::any_of(dims.begin(), dims.end(), isUnit);
    if (memoryOrder) {
      found = runDims<2>(std::span<const std::int64_t>(extent), {&src, &dst}, dims, true);
    }
    if (found && (pickTiles(dims, elementSize) || pickBlock(dims, elementSize))) {
      const auto size = static_cast<std::int64_t>(elementSize);
      loop_ = RunLoop<2>({(src.base - srcView.data) / size, (dst.base - dstView.data) / size}, dims,
                         sizes);
      return;
    }
    run_ = runFor(elementSize);
    loop_ = RunLoop<2>(extent, {&src, &dst}, {&srcView, &dstView}, sizes, memoryOrder);
  }

  // On the kernel threads' team (team.hpp) from kTeamFrom elements, split by
  // tiles or along the runs.
  void run(const std::byte* from, std::byte* to) const {
    const std::array<std::byte*, 2> data{const_cast<std::byte*>(from), to};
    if (wide_ != nullptr) { // a point is a tile (runs of length 1)
      forEachPiece(loop_, data, out_.extent * in_.extent, 1, [&](const auto& at, std::int64_t) {
        wide_(at[0], out_.stride[0], at[1], in_.stride[1], in_.extent, out_.extent);
      });
      return;
    }
    if (block_ != nullptr) { // a point is a block of the innermost dims
      forEachPiece(loop_, data, blockSize_, 1, [&](const auto& at, std::int64_t) {
        block_(at[0], at[1], from_.data(), to_.data(), blockSize_);
      });
      return;
    }
    if (tiles_ != nullptr) {
      forEachPiece(loop_, data, out_.extent * in_.extent, 1,
                   [&](const auto& at, std::int64_t) { tiles_(out_, in_, at[0], at[1]); });
      return;
    }
    const std::int64_t ss = loop_.stride(0);
    const std::int64_t ds = loop_.stride(1);
    forEachPiece(loop_, data, 1, 16,
                 [&](const auto& at, std::int64_t m) { run_(at[0], ss, at[1], ds, m); });
  }

private:
  using Tiles = void (*)(const RunDim<2>&, const RunDim<2>&, const std::byte*, std::byte*);

  static bool isUnit(const RunDim<2>& d) { return d.stride[0] == 1 && d.stride[1] == 1; }
  using Run = void (*)(const std::byte*, std::int64_t, std::byte*, std::int64_t, std::int64_t);

  template <class E>
  static void tilesOf(const RunDim<2>& o, const RunDim<2>& i, const std::byte* from,
                      std::byte* to) {
    copyTiles<E>(o, i, reinterpret_cast<const E*>(from), reinterpret_cast<E*>(to));
  }

  // Takes the two tiled dims out of dims when a transpose applies.
  bool pickTiles(std::vector<RunDim<2>>& dims, std::size_t elementSize) {
    std::size_t out = dims.size();
    std::size_t in = dims.size();
    for (std::size_t k = 0; k < dims.size(); ++k) {
      out = dims[k].stride[1] == 1 ? k : out;
      in = dims[k].stride[0] == 1 ? k : in;
    }
    if (out == dims.size() || in == dims.size() || in == out ||
        dims[out].extent * dims[in].extent < kMinTile) {
      return false;
    }
    switch (elementSize) { // by element size, a bitwise copy
    case 1:
      tiles_ = &tilesOf<std::uint8_t>;
      break;
    case 2:
      tiles_ = &tilesOf<std::uint16_t>;
      break;
    case 4: // in the vector unit's registers (vector_math.hpp)
      wide_ = vectorKernels().transpose4;
      break;
    case 8:
      wide_ = vectorKernels().transpose8;
      break;
    default:
      return false;
    }
    out_ = dims[out];
    in_ = dims[in];
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(std::max(out, in)));
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(std::min(out, in)));
    return true;
  }

  // Runs of fewer than kShortRun elements or with a stride (a transpose or
  // slice of small inner dims, whose tiles would be smaller than kMinTile:
  // the stride phases of a transposed convolution interleaved, 2 x 5
  // elements a tile) copy a block of the innermost dims at a time instead,
  // up to kBlock elements, through a table of each element's two offsets
  // made here: one call per block rather than per run or per tiny tile.
  // Takes the block's dims out of dims.
  bool pickBlock(std::vector<RunDim<2>>& dims, std::size_t elementSize) {
    std::size_t first = dims.size();
    std::int64_t n = 1;
    while (first > 0 && n * dims[first - 1].extent <= kBlock) {
      n *= dims[--first].extent;
    }
    const bool unit = !dims.empty() && dims.back().stride[0] == 1 && dims.back().stride[1] == 1;
    if (dims.empty() || (unit && dims.back().extent >= kShortRun) || dims.size() - first < 2) {
      return false;
    }
    switch (elementSize) {
    case 1:
      block_ = &blockOf<std::uint8_t>;
      break;
    case 2:
      block_ = &blockOf<std::uint16_t>;
      break;
    case 4:
      block_ = &blockOf<std::uint32_t>;
      break;
    case 8:
      block_ = &blockOf<std::uint64_t>;
      break;
    default:
      return false;
    }
    blockSize_ = n;
    from_.assign(static_cast<std::size_t>(n), 0);
    to_.assign(static_cast<std::size_t>(n), 0);
    std::int64_t span = 1; // the block's points row-major, the last dim fastest
    for (std::size_t d = dims.size(); d-- > first;) {
      for (std::int64_t p = 0; p < n; ++p) {
        const std::int64_t k = p / span % dims[d].extent;
        from_[static_cast<std::size_t>(p)] += k * dims[d].stride[0];
        to_[static_cast<std::size_t>(p)] += k * dims[d].stride[1];
      }
      span *= dims[d].extent;
    }
    dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(first), dims.end());
    return true;
  }

  template <class E>
  static void blockOf(const std::byte* from, std::byte* to, const std::int64_t* fromOffsets,
                      const std::int64_t* toOffsets, std::int64_t n) {
    const E* s = reinterpret_cast<const E*>(from);
    E* d = reinterpret_cast<E*>(to);
    for (std::int64_t j = 0; j < n; ++j) {
      d[toOffsets[j]] = s[fromOffsets[j]];
    }
  }

  static Run runFor(std::size_t elementSize) {
    switch (elementSize) {
    case 1:
      return &copyRun<std::uint8_t>;
    case 2:
      return &copyRun<std::uint16_t>;
    case 4:
      return &copyRun<std::uint32_t>;
    case 8:
      return &copyRun<std::uint64_t>;
    default:
      break;
    }
    throw InternalError("copy of elements of " + std::to_string(elementSize) + " bytes");
  }

  RunLoop<2> loop_;       // the runs, or the dims around the tiles
  Tiles tiles_ = nullptr; // 1- and 2-byte elements
  // 4- and 8-byte elements: from, its stride along out_, to, its stride
  // along in_, in_'s extent, out_'s.
  void (*wide_)(const void*, std::int64_t, void*, std::int64_t, std::int64_t,
                std::int64_t) = nullptr;
  RunDim<2> out_{0, {}};
  RunDim<2> in_{0, {}};
  Run run_ = nullptr;
  // A block per point: from, to, the elements' offsets in each, their count.
  void (*block_)(const std::byte*, std::byte*, const std::int64_t*, const std::int64_t*,
                 std::int64_t) = nullptr;
  std::int64_t blockSize_ = 0;
  std::vector<std::int64_t> from_, to_;
};

// One input, one output, both with unit-shape IPFs (transpose, slice, the
// common refinement of reshape).
class Copy final : public PreparedKernel {
public:
  explicit Copy(const KernelCall& call)
      : plan_(call.index, walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index),
              walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index), call.inputs[0][0],
              call.outputs[0][0], dtypeSize(call.inputs[0][0].dtype)) {}
  void run(const KernelCall& call) override {
    plan_.run(call.inputs[0][0].data, call.outputs[0][0].data);
  }

private:
  CopyPlan plan_;
};

std::unique_ptr<PreparedKernel> prepareCopy(const KernelCall& call) {
  return std::make_unique<Copy>(call);
}

bool unitShape(const IndexProjection& ipf) {
  for (std::int64_t e : ipf.shape()) {
    if (e != 1) {
      return false;
    }
  }
  return true;
}

// reshape's single-point (unshardable) form: both views hold whole tensors,
// and row-major order is the same elements in both shapes. The input is read
// as the output's shape in place when it is dense row-major; otherwise it is
// first copied into a dense scratch block.
class ReshapeWhole final : public PreparedKernel {
public:
  explicit ReshapeWhole(const KernelCall& call) {
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    const auto& inShape = call.op.application.inputs[0].tensors[0].shape;
    const auto& outShape = call.op.application.outputs[0].tensors[0].shape;
    const ZRange inBounds = ZRange::fromShape(ZPoint(inShape));
    const ZRange outBounds = ZRange::fromShape(ZPoint(outShape));
    const std::size_t size = dtypeSize(in.dtype);
    TensorView flat;
    flat.data = in.data;
    flat.dtype = in.dtype;
    flat.region = outBounds;
    flat.strides = rowMajorStrides(outShape);
    if (in.region != inBounds || in.strides != rowMajorStrides(inShape)) {
      scratch_ = Buffer::host(in.dtype, inBounds);
      const TensorView dense = scratch_.view();
      gather_.emplace(inBounds, walkRegion(in, inBounds), walkRegion(dense, inBounds), in, dense,
                      size);
      flat.data = scratch_.data();
    }
    scatter_.emplace(outBounds, walkRegion(flat, outBounds), walkRegion(out, outBounds), flat, out,
                     size);
  }
  void run(const KernelCall& call) override {
    const std::byte* from = call.inputs[0][0].data;
    if (gather_) {
      gather_->run(from, scratch_.data());
      from = scratch_.data();
    }
    scatter_->run(from, call.outputs[0][0].data);
  }

private:
  Buffer scratch_;
  std::optional<CopyPlan> gather_;
  std::optional<CopyPlan> scatter_;
};

std::unique_ptr<PreparedKernel> prepareReshape(const KernelCall& call) {
  if (unitShape(inputIpf(call, 0)) && unitShape(outputIpf(call, 0))) {
    return std::make_unique<Copy>(call); // the common refinement: a point is one element of each
  }
  return std::make_unique<ReshapeWhole>(call);
}

// cast: element by element through convertValue.
template <class From, class To>
void castRun(const std::byte* from, std::int64_t sx, std::byte* to, std::int64_t sy,
             std::int64_t n) {
  const From* x = reinterpret_cast<const From*>(from);
  To* y = reinterpret_cast<To*>(to);
  if (sx == 1 && sy == 1) {
    for (std::int64_t j = 0; j < n; ++j) {
      y[j] = convertValue<To, From>(x[j]);
    }
  } else {
    for (std::int64_t j = 0; j < n; ++j) {
      y[j * sy] = convertValue<To, From>(x[j * sx]);
    }
  }
}

class Cast final : public PreparedKernel {
public:
  explicit Cast(const KernelCall& call)
      : loop_(ipfLoop<2>(call, {&call.inputs[0][0], &call.outputs[0][0]},
                         {&inputIpf(call, 0), &outputIpf(call, 0)})) {
    dispatchWithBool(call.inputs[0][0].dtype, [&](auto from) {
      dispatchWithBool(call.outputs[0][0].dtype, [&](auto to) {
        run_ = &castRun<typename decltype(from)::type, typename decltype(to)::type>;
      });
    });
  }
  void run(const KernelCall& call) override {
    const std::int64_t n = loop_.length();
    const std::int64_t sx = loop_.stride(0);
    const std::int64_t sy = loop_.stride(1);
    loop_.forEach({call.inputs[0][0].data, call.outputs[0][0].data},
                  [&](const auto& at) { run_(at[0], sx, at[1], sy, n); });
  }

private:
  RunLoop<2> loop_;
  void (*run_)(const std::byte*, std::int64_t, std::byte*, std::int64_t, std::int64_t) = nullptr;
};

std::unique_ptr<PreparedKernel> prepareCast(const KernelCall& call) {
  return std::make_unique<Cast>(call);
}

// concat and split: one copy per element of the list port that the shard
// reaches (forEachAxisPart), between that element's view and the other port's.
class AxisParts final : public PreparedKernel {
public:
  AxisParts(const KernelCall& call, bool isConcat) : concat_(isConcat) {
    forEachAxisPart(call, isConcat ? "sizes" : "sections", [&](std::size_t j, const ZRange& part) {
      const TensorView& in = call.inputs[0][isConcat ? j : 0];
      const TensorView& out = call.outputs[0][isConcat ? 0 : j];
      const Walk src = walkThrough(in, inputIpf(call, 0, isConcat ? j : 0), part);
      const Walk dst = walkThrough(out, outputIpf(call, 0, isConcat ? 0 : j), part);
      parts_.push_back(Part{j, CopyPlan(part, src, dst, in, out, dtypeSize(in.dtype))});
    });
  }
  void run(const KernelCall& call) override {
    for (const Part& p : parts_) {
      p.plan.run(call.inputs[0][concat_ ? p.element : 0].data,
                 call.outputs[0][concat_ ? 0 : p.element].data);
    }
  }

private:
  struct Part {
    std::size_t element;
    CopyPlan plan;
  };
  bool concat_;
  std::vector<Part> parts_;
};

// concat: index = the result shape; element j covers [offset_j, offset_j + size_j)
// of the axis.
std::unique_ptr<PreparedKernel> prepareConcat(const KernelCall& call) {
  return std::make_unique<AxisParts>(call, true);
}

// split: index = the input shape; result j holds [offset_j, offset_j + sections_j).
std::unique_ptr<PreparedKernel> prepareSplit(const KernelCall& call) {
  return std::make_unique<AxisParts>(call, false);
}

template <std::unique_ptr<PreparedKernel> (*Prepare)(const KernelCall&)>
void add(CpuRegistry& registry, const char* name) {
  registry.add(name, &runPrepared<Prepare>, Prepare);
}

} // namespace

void registerShapeKernels(CpuRegistry& registry) {
  add<&prepareCopy>(registry, "transpose");
  add<&prepareCopy>(registry, "slice"); // the input IPF is offset by starts
  add<&prepareReshape>(registry, "reshape");
  add<&prepareCast>(registry, "cast");
  add<&prepareConcat>(registry, "concat");
  add<&prepareSplit>(registry, "split");
}

} // namespace tapestry::backend::cpu
