// Reductions along one axis: sum, mean, max. The index space is the input
// shape and the output IPF drops the axis, so a shard reduces its own part of
// the axis into its output selection: the final value when the axis is whole,
// a partial (joined with the output's combine) when it is split. mean divides
// by the full axis length $n from the bindings, so partial means add up.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

namespace {

enum class Reduce { Sum, Mean, Max };

constexpr std::int64_t kLanes = 8;

template <class T, Reduce kind> void reduceTyped(const KernelCall& call) {
  using Acc = typename Num<T>::C; // float for float32/16-bit floats, double, int64
  const ZRange& idx = call.index;
  const std::size_t ax = static_cast<std::size_t>(intBinding(call.op, "ax"));
  const std::int64_t n = intBinding(call.op, "n");

  // One accumulator per output element of the shard: row-major over the
  // shard's extents with the axis collapsed (stride 0 along it).
  std::vector<std::int64_t> accExtent = idx.shape().vector();
  accExtent[ax] = 1;
  Acc identity = Acc(0);
  if constexpr (kind == Reduce::Max) {
    identity = std::numeric_limits<Acc>::has_infinity ? -std::numeric_limits<Acc>::infinity()
                                                      : std::numeric_limits<Acc>::lowest();
  }
  std::int64_t count = 1;
  for (std::int64_t e : accExtent) {
    count *= e;
  }
  std::vector<Acc> acc(static_cast<std::size_t>(count), identity);
  Walk accWalk = walkDense(reinterpret_cast<std::byte*>(acc.data()), accExtent);
  accWalk.stride[ax] = 0;

  const Walk in = walkThrough(call.inputs[0][0], inputIpf(call, 0), idx);
  const T* x = in.ptr<T>();
  auto fold = [](Acc& slot, Acc v) {
    if constexpr (kind == Reduce::Max) {
      if constexpr (std::is_integral_v<Acc>) {
        slot = v > slot ? v : slot;
      } else if (v > slot || std::isnan(v)) { // NaN propagates
        slot = v;
      }
    } else if constexpr (std::is_integral_v<Acc>) {
      slot = wrapAdd(slot, v);
    } else {
      slot += v;
    }
  };
  forEachRun<2>(idx, {&in, &accWalk},
                [&](const std::array<std::int64_t, 2>& off, std::int64_t len,
                    const std::array<std::int64_t, 2>& st) {
                  const T* xs = x + off[0];
                  Acc* a = acc.data() + off[1];
                  if (st[1] != 0) { // across the axis: one accumulator per element
                    for (std::int64_t j = 0; j < len; ++j) {
                      fold(a[j * st[1]], Num<T>::load(xs[j * st[0]]));
                    }
                    return;
                  }
                  // Along the axis: kLanes independent accumulators, then one
                  // (a single one is a chain of dependent adds, 4x slower).
                  Acc lanes[kLanes];
                  std::fill(lanes, lanes + kLanes, identity);
                  std::int64_t j = 0;
                  for (; j + kLanes <= len; j += kLanes) {
                    for (std::int64_t l = 0; l < kLanes; ++l) {
                      fold(lanes[l], Num<T>::load(xs[(j + l) * st[0]]));
                    }
                  }
                  for (; j < len; ++j) {
                    fold(lanes[0], Num<T>::load(xs[j * st[0]]));
                  }
                  for (std::int64_t l = 0; l < kLanes; ++l) {
                    fold(*a, lanes[l]);
                  }
                });

  const Walk out = walkThrough(call.outputs[0][0], outputIpf(call, 0), idx);
  T* y = out.ptr<T>();
  [[maybe_unused]] const Acc length = static_cast<Acc>(n);
  forEachRun<2>(std::span<const std::int64_t>(accExtent), {&accWalk, &out},
                [&](const std::array<std::int64_t, 2>& off, std::int64_t len,
                    const std::array<std::int64_t, 2>& st) {
                  const Acc* a = acc.data() + off[0];
                  T* ys = y + off[1];
                  for (std::int64_t j = 0; j < len; ++j) {
                    if constexpr (kind == Reduce::Mean) {
                      ys[j * st[1]] = Num<T>::store(a[j * st[0]] / length);
                    } else {
                      ys[j * st[1]] = Num<T>::store(a[j * st[0]]);
                    }
                  }
                });
}

template <Reduce kind> void reduceKernel(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T> && kind == Reduce::Mean) {
      unsupportedDType(call, dtype);
    } else {
      reduceTyped<T, kind>(call);
    }
  });
}

} // namespace

void registerReduceKernels(CpuRegistry& registry) {
  registry.add("sum", &reduceKernel<Reduce::Sum>);
  registry.add("mean", &reduceKernel<Reduce::Mean>);
  registry.add("max", &reduceKernel<Reduce::Max>);
}

} // namespace tapestry::backend::cpu
