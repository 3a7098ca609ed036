// Reductions along one axis: sum, mean, max, min, prod. The index space is the input
// shape and the output IPF drops the axis, so a shard reduces its own part of
// the axis into its output selection: the final value when the axis is whole,
// a partial (joined with the output's combine) when it is split. mean divides
// by the full axis length $n from the bindings, so partial means add up.
//
// Prepared once per call: the loop runs over the shard's output points (the
// index box with the axis collapsed). When the axis is the innermost dim that
// moves, each output element reduces one row (float32 sum, mean and max over
// contiguous rows: vector_math.hpp's rowSums and rowMaxes, all the rows in one
// call; min and prod fold element by element); otherwise the runs go along the dims after the
// axis and a row of accumulators takes the axis one step at a time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/vector_math.hpp"

namespace tapestry::backend::cpu {

namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod };

constexpr std::int64_t kLanes = 8;

template <class T, Reduce kind> class PreparedReduce final : public PreparedKernel {
public:
  using Acc = typename Num<T>::C; // float for float32/16-bit floats, double, int64

  explicit PreparedReduce(const KernelCall& call) : vk_(vectorKernels()) {
    const ZRange& idx = call.index;
    const auto ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
    length_ = static_cast<Acc>(intBinding(call.op, "n"));
    const TensorView& in = call.inputs[0][0];
    const TensorView& out = call.outputs[0][0];
    const Walk inWalk = walkThrough(in, inputIpf(call, 0), idx);
    const Walk outWalk = walkThrough(out, outputIpf(call, 0), idx);
    std::vector<std::int64_t> extent = idx.shape().vector();
    axisExtent_ = extent[ax];
    axisStride_ = inWalk.stride[ax];
    extent[ax] = 1;
    rowsAlongAxis_ = true; // every dim after the axis has extent 1 in this shard
    for (std::size_t d = ax + 1; d < extent.size(); ++d) {
      rowsAlongAxis_ = rowsAlongAxis_ && extent[d] == 1;
    }
    loop_ = RunLoop<2>(extent, {&inWalk, &outWalk}, {&in, &out},
                       {dtypeSize(in.dtype), dtypeSize(out.dtype)});
    if (!rowsAlongAxis_) {
      acc_.resize(static_cast<std::size_t>(loop_.length()));
    }
  }

  void run(const KernelCall& call) override {
    const std::int64_t n = loop_.length();
    const std::int64_t sx = loop_.stride(0);
    const std::int64_t sy = loop_.stride(1);
    loop_.forEach({call.inputs[0][0].data, call.outputs[0][0].data}, [&](const auto& at) {
      const T* x = reinterpret_cast<const T*>(at[0]);
      T* y = reinterpret_cast<T*>(at[1]);
      if constexpr (kVector) {
        if (rowsAlongAxis_ && axisStride_ == 1) {
          rows(x, sx, y, sy, n);
          return;
        }
      }
      if (rowsAlongAxis_) {
        for (std::int64_t j = 0; j < n; ++j) {
          y[j * sy] = finish(row(x + j * sx));
        }
      } else {
        across(x, sx, y, sy, n);
      }
    });
  }

private:
  // float32 sum, mean and max go through vector_math.hpp
  static constexpr bool kVector =
      std::is_same_v<T, float> &&
      (kind == Reduce::Sum || kind == Reduce::Mean || kind == Reduce::Max);

  static constexpr Acc identity() {
    if constexpr (kind == Reduce::Max) {
      return std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                    : std::numeric_limits<Acc>::lowest();
    } else if constexpr (kind == Reduce::Min) {
      return std::numeric_limits<Acc>::has_infinity ? std::numeric_limits<Acc>::infinity()
                                                    : std::numeric_limits<Acc>::max();
    } else if constexpr (kind == Reduce::Prod) {
      return Acc(1);
    } else {
      return Acc(0);
    }
  }
  static void fold(Acc& slot, Acc v) {
    if constexpr (kind == Reduce::Max) {
      if constexpr (std::is_integral_v<Acc>) {
        slot = v > slot ? v : slot;
      } else if (v > slot || std::isnan(v)) { // NaN propagates
        slot = v;
      }
    } else if constexpr (kind == Reduce::Min) {
      if constexpr (std::is_integral_v<Acc>) {
        slot = v < slot ? v : slot;
      } else if (v < slot || std::isnan(v)) {
        slot = v;
      }
    } else if constexpr (kind == Reduce::Prod) {
      if constexpr (std::is_integral_v<Acc>) {
        slot = wrapMul(slot, v);
      } else {
        slot *= v;
      }
    } else if constexpr (std::is_integral_v<Acc>) {
      slot = wrapAdd(slot, v);
    } else {
      slot += v;
    }
  }
  T finish(Acc v) const {
    if constexpr (kind == Reduce::Mean) {
      return Num<T>::store(v / length_);
    } else {
      return Num<T>::store(v);
    }
  }

  // One row of the axis from x.
  Acc row(const T* x) const {
    const std::int64_t len = axisExtent_;
    const std::int64_t st = axisStride_;
    if constexpr (kVector) {
      auto whole = kind == Reduce::Max ? vk_.max : vk_.sum;
      if (st == 1) {
        return whole(x, len);
      }
      alignas(64) float chunk[kChunk];
      Acc total = identity();
      for (std::int64_t j0 = 0; j0 < len; j0 += kChunk) {
        const std::int64_t m = std::min(kChunk, len - j0);
        for (std::int64_t j = 0; j < m; ++j) {
          chunk[j] = x[(j0 + j) * st];
        }
        fold(total, whole(chunk, m));
      }
      return total;
    } else {
      // kLanes independent accumulators, then one (a single one is a chain of
      // dependent adds, 4x slower).
      Acc lanes[kLanes];
      std::fill(lanes, lanes + kLanes, identity());
      std::int64_t j = 0;
      for (; j + kLanes <= len; j += kLanes) {
        for (std::int64_t l = 0; l < kLanes; ++l) {
          fold(lanes[l], Num<T>::load(x[(j + l) * st]));
        }
      }
      for (; j < len; ++j) {
        fold(lanes[0], Num<T>::load(x[j * st]));
      }
      Acc total = identity();
      for (std::int64_t l = 0; l < kLanes; ++l) {
        fold(total, lanes[l]);
      }
      return total;
    }
  }

  // n contiguous rows of the axis (float32 sum, mean, max), reduced in one
  // call; mean's division in a second vector pass where y is contiguous.
  void rows(const float* x, std::int64_t sx, float* y, std::int64_t sy, std::int64_t n) const {
    (kind == Reduce::Max ? vk_.rowMaxes : vk_.rowSums)(x, sx, axisExtent_, n, y, sy);
    if constexpr (kind == Reduce::Mean) {
      if (sy == 1) {
        vk_.binary[static_cast<int>(VBinary::Div)][static_cast<int>(VScalar::B)](y, &length_, y, n);
      } else {
        for (std::int64_t j = 0; j < n; ++j) {
          y[j * sy] /= length_;
        }
      }
    }
  }

  // n output elements at once: the axis folded into acc_ one step at a time.
  // float32 sum, mean and max with contiguous outputs hold their columns in
  // registers through the axis (vector_math.hpp's columnSums, columnMaxes).
  void across(const T* x, std::int64_t sx, T* y, std::int64_t sy, std::int64_t n) {
    Acc* acc = acc_.data();
    if constexpr (kVector) {
      if (sx == 1) {
        (kind == Reduce::Max ? vk_.columnMaxes : vk_.columnSums)(x, axisStride_, axisExtent_, n,
                                                                 acc);
        finishAcross(acc, y, sy, n);
        return;
      }
    }
    for (std::int64_t j = 0; j < n; ++j) {
      acc[j] = Num<T>::load(x[j * sx]);
    }
    for (std::int64_t k = 1; k < axisExtent_; ++k) {
      const T* xk = x + k * axisStride_;
      if constexpr (kVector) {
        const auto fn =
            vk_.binary[static_cast<int>(kind == Reduce::Max ? VBinary::MaxNan : VBinary::Add)][0];
        if (sx == 1) {
          fn(acc, xk, acc, n);
          continue;
        }
        alignas(64) float chunk[kChunk];
        for (std::int64_t j0 = 0; j0 < n; j0 += kChunk) {
          const std::int64_t m = std::min(kChunk, n - j0);
          for (std::int64_t j = 0; j < m; ++j) {
            chunk[j] = xk[(j0 + j) * sx];
          }
          fn(acc + j0, chunk, acc + j0, m);
        }
      } else {
        for (std::int64_t j = 0; j < n; ++j) {
          fold(acc[j], Num<T>::load(xk[j * sx]));
        }
      }
    }
    finishAcross(acc, y, sy, n);
  }
  void finishAcross(const Acc* acc, T* y, std::int64_t sy, std::int64_t n) const {
    if constexpr (std::is_same_v<T, float> && kind == Reduce::Mean) {
      if (sy == 1) { // the division of finish(), vectorised
        vk_.binary[static_cast<int>(VBinary::Div)][static_cast<int>(VScalar::B)](acc, &length_, y,
                                                                                 n);
        return;
      }
    }
    for (std::int64_t j = 0; j < n; ++j) {
      y[j * sy] = finish(acc[j]);
    }
  }

  const VectorKernels& vk_;
  RunLoop<2> loop_;
  Acc length_{};
  std::int64_t axisExtent_ = 1;
  std::int64_t axisStride_ = 0;
  bool rowsAlongAxis_ = true;
  std::vector<Acc> acc_; // scratch of run()
};

template <Reduce kind> std::unique_ptr<PreparedKernel> prepareReduce(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  std::unique_ptr<PreparedKernel> prepared;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T> && kind == Reduce::Mean) {
      unsupportedDType(call, dtype);
    } else {
      prepared = std::make_unique<PreparedReduce<T, kind>>(call);
    }
  });
  return prepared;
}

} // namespace

void registerReduceKernels(CpuRegistry& registry) {
  registry.add("sum", &runPrepared<&prepareReduce<Reduce::Sum>>, &prepareReduce<Reduce::Sum>);
  registry.add("mean", &runPrepared<&prepareReduce<Reduce::Mean>>, &prepareReduce<Reduce::Mean>);
  registry.add("max", &runPrepared<&prepareReduce<Reduce::Max>>, &prepareReduce<Reduce::Max>);
  registry.add("min", &runPrepared<&prepareReduce<Reduce::Min>>, &prepareReduce<Reduce::Min>);
  registry.add("prod", &runPrepared<&prepareReduce<Reduce::Prod>>, &prepareReduce<Reduce::Prod>);
}

} // namespace tapestry::backend::cpu
