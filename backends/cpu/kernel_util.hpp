// Internals shared by the CPU kernels: numeric traits per storage type, strided
// walks of tensor views through an operation's IPFs, the run loop every
// elementwise kernel is built on, matrix products through cblas, and access to
// the operation's params and bindings. Not a public header.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backends/backend.hpp"
#include "backends/dtype.hpp"
#include "backends/walk.hpp"

namespace tapestry::backend::cpu {

using CpuKernel = void (*)(const KernelCall&);
// Makes a call ready once (PreparedKernel); null when this call gains nothing
// from preparing, and the kernel function runs it each time instead.
using CpuPrepare = std::unique_ptr<PreparedKernel> (*)(const KernelCall&);
struct CpuKernelFns {
  CpuKernel run = nullptr;
  CpuPrepare prepare = nullptr;
};
class CpuRegistry : public KernelRegistry<CpuKernelFns> {
public:
  void add(std::string name, CpuKernel run, CpuPrepare prepare = nullptr) {
    KernelRegistry<CpuKernelFns>::add(std::move(name), CpuKernelFns{run, prepare});
  }
};

// A matrix dimension as BLAS's int (Error when it does not fit).
inline int toBlasInt(std::int64_t v) {
  if (v > static_cast<std::int64_t>(std::numeric_limits<int>::max())) {
    throw Error("backend cpu: a matrix dimension of " + std::to_string(v) +
                " is too large for BLAS (at most " +
                std::to_string(std::numeric_limits<int>::max()) + ")");
  }
  return static_cast<int>(v);
}

void registerElementwiseKernels(CpuRegistry& registry);
void registerMatmulKernels(CpuRegistry& registry);
void registerConvKernels(CpuRegistry& registry);
void registerReduceKernels(CpuRegistry& registry);
void registerNormalizationKernels(CpuRegistry& registry);
void registerAttentionKernels(CpuRegistry& registry);
void registerRopeKernel(CpuRegistry& registry);
void registerBatchnormKernels(CpuRegistry& registry);
void registerShapeKernels(CpuRegistry& registry);
void registerEmbeddingKernels(CpuRegistry& registry);
void registerPoolKernels(CpuRegistry& registry);

// C[m x n] = A[m x k] · B[k x n], dense row-major float64, through cblas_dgemm.
void denseGemm(std::int64_t m, std::int64_t n, std::int64_t k, const double* a, const double* b,
               double* c);
// The kernel of a template with a body and no native kernel (body_kernel.cpp).
void runBodyKernel(const KernelCall& call);
// The kernel of a template with `extern:` (extern_kernel.cpp).
void runExternKernel(const KernelCall& call);

// ---------------------------------------------------------------- numbers

template <class T>
constexpr bool kIsInt = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

// Num<T>::C is the type T computes in (float for the 16-bit floats, int64 for
// integers); load/store convert (store rounds to nearest even, or wraps ints).
template <class T> struct Num {
  using C = T;
  static C load(T x) { return x; }
  static T store(C c) { return c; }
};
template <> struct Num<Half> {
  using C = float;
  static float load(Half x) { return halfToFloat(x); }
  static Half store(float c) { return floatToHalf(c); }
};
template <> struct Num<BFloat16> {
  using C = float;
  static float load(BFloat16 x) { return bfloat16ToFloat(x); }
  static BFloat16 store(float c) { return floatToBFloat16(c); }
};
// bool computes as C++ bool; store writes 0 or 1 (cast: nonzero, NaN included, is true).
template <> struct Num<Bool> {
  using C = bool;
  static bool load(Bool x) { return x.bits != 0; }
  static Bool store(bool c) { return Bool{static_cast<std::uint8_t>(c ? 1 : 0)}; }
};
template <> struct Num<std::int32_t> {
  using C = std::int64_t;
  static std::int64_t load(std::int32_t x) { return x; }
  static std::int32_t store(std::int64_t c) { return static_cast<std::int32_t>(c); } // wraps
};

// Integer arithmetic that wraps instead of overflowing (no UB).
inline std::int64_t wrapAdd(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
inline std::int64_t wrapSub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
inline std::int64_t wrapMul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

// The exact GELU in the compute type C: x * Phi(x) = x/2 * (1 + erf(x /
// sqrt(2))). The scalar loops of gelu and of linear_act's epilogue.
template <class C> C geluErf(C x) {
  return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
}

// GELU's tanh approximation in the compute type C: x/2 * (1 + tanh(sqrt(2 /
// pi) * (x + 0.044715 x^3))). The scalar loop of gelu_tanh.
template <class C> C geluTanh(C x) {
  return C(0.5) * x * (C(1) + std::tanh(C(0.79788456080286535588) * (x + C(0.044715) * x * x * x)));
}

// SiLU in the compute type C: x * sigmoid(x). The scalar loop of silu.
template <class C> C silu(C x) {
  return x * (C(1) / (C(1) + std::exp(-x)));
}

// HardSwish in the compute type C: x * max(0, min(1, x / 6 + 1/2)); NaN
// stays NaN. The scalar loop of hard_swish.
template <class C> C hardSwish(C x) {
  const C y = x / C(6) + C(0.5);
  return x * (y < C(0) ? C(0) : (y > C(1) ? C(1) : y));
}

// Converts a value of one storage type to another (cast): floats round to
// nearest even; float to int truncates toward zero and saturates (NaN gives 0);
// int to narrower int wraps; anything to bool is "nonzero" (NaN too, as
// NumPy's astype(bool)); bool to anything is 0 or 1.
template <class To, class From> To convertValue(From x) {
  using CF = typename Num<From>::C;
  using CT = typename Num<To>::C;
  const CF v = Num<From>::load(x);
  if constexpr (kIsInt<To> && !kIsInt<From> && !std::is_same_v<From, Bool>) {
    if (std::isnan(v)) {
      return To{0};
    }
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<To>::max());
    const double d = static_cast<double>(v);
    if (d <= lo) {
      return std::numeric_limits<To>::lowest();
    }
    if (d >= hi) { // hi is 2^63 for int64 (not representable), so >= saturates exactly
      return std::numeric_limits<To>::max();
    }
    return static_cast<To>(static_cast<std::int64_t>(d));
  } else if constexpr (std::is_same_v<To, Bool>) {
    return Num<Bool>::store(v != CF(0)); // NaN != 0
  } else {
    return Num<To>::store(static_cast<CT>(v));
  }
}

// ---------------------------------------------------------------- walks

// Strided walks of views (backends/walk.hpp, shared with the CUDA backend).
using Walk = StrideWalk;
using backend::walkDense;
using backend::walkRegion;
using backend::walkThrough;

// One dim of an index box as the run walkers see it: its extent and each
// operand's stride along it (in elements).
template <std::size_t N> struct RunDim {
  std::int64_t extent;
  std::array<std::int64_t, N> stride;
};

// The dims of the index box with extents `extent`, walked by `walks`: dims of
// extent 1 dropped, and dims that every operand walks contiguously merged into
// one. Returns false when the box is empty (an extent is 0). With `anyOrder`
// (a kernel whose index points are independent: elementwise) the dims are
// first put in memory order, the largest strides (summed over the operands)
// outermost, so that a box laid out channels last walks in runs as long as a
// row-major one; row-major operands keep the index order.
template <std::size_t N>
bool runDims(std::span<const std::int64_t> extent, const std::array<const Walk*, N>& walks,
             std::vector<RunDim<N>>& dims, bool anyOrder = false) {
  dims.clear();
  std::vector<RunDim<N>> raw;
  for (std::size_t k = 0; k < extent.size(); ++k) {
    if (extent[k] == 0) {
      return false;
    }
    if (extent[k] == 1) {
      continue;
    }
    RunDim<N> dim{extent[k], {}};
    for (std::size_t i = 0; i < N; ++i) {
      dim.stride[i] = walks[i]->stride[k];
    }
    raw.push_back(dim);
  }
  if (anyOrder) {
    auto weight = [](const RunDim<N>& d) {
      std::int64_t w = 0;
      for (std::int64_t s : d.stride) {
        w += s < 0 ? -s : s;
      }
      return w;
    };
    std::stable_sort(raw.begin(), raw.end(),
                     [&](const RunDim<N>& a, const RunDim<N>& b) { return weight(a) > weight(b); });
  }
  for (const RunDim<N>& dim : raw) {
    bool merge = !dims.empty();
    for (std::size_t i = 0; merge && i < N; ++i) {
      merge = dims.back().stride[i] == dim.stride[i] * dim.extent;
    }
    if (merge) {
      dims.back() = RunDim<N>{dims.back().extent * dim.extent, dim.stride};
    } else {
      dims.push_back(dim);
    }
  }
  return true;
}

// Calls f(offsets) once per point of `dims` (row-major order), with each
// operand's offset of that point.
template <std::size_t N, class F> void forEachOffset(const std::vector<RunDim<N>>& dims, F&& f) {
  std::array<std::int64_t, N> offsets{};
  std::vector<std::int64_t> counter(dims.size(), 0);
  while (true) {
    f(offsets);
    std::size_t d = dims.size();
    while (true) {
      if (d == 0) {
        return;
      }
      --d;
      for (std::size_t i = 0; i < N; ++i) {
        offsets[i] += dims[d].stride[i];
      }
      if (++counter[d] < dims[d].extent) {
        break;
      }
      for (std::size_t i = 0; i < N; ++i) {
        offsets[i] -= dims[d].stride[i] * dims[d].extent;
      }
      counter[d] = 0;
    }
  }
}

// Calls f(offsets, n, strides) once per innermost run of the index box with
// extents `extent`: the run's n elements of operand i are at
// offsets[i] + j·strides[i], j < n (offsets and strides in elements, from each
// walk's base). Dims of extent 1 are skipped and dims every operand walks
// contiguously are merged, so runs are as long as the layouts allow; with
// `anyOrder` (a copy: the order of the points does not matter) in memory
// order, so channels-last boxes run as long as row-major ones.
template <std::size_t N, class F>
void forEachRun(std::span<const std::int64_t> extent, const std::array<const Walk*, N>& walks,
                F&& f, bool anyOrder = false) {
  std::vector<RunDim<N>> dims;
  if (!runDims<N>(extent, walks, dims, anyOrder)) {
    return;
  }
  if (dims.empty()) {
    const std::array<std::int64_t, N> zero{};
    f(zero, std::int64_t{1}, zero);
    return;
  }
  const RunDim<N> inner = dims.back();
  dims.pop_back();
  forEachOffset<N>(dims, [&](const std::array<std::int64_t, N>& offsets) {
    f(offsets, inner.extent, inner.stride);
  });
}

template <std::size_t N, class F>
void forEachRun(const ZRange& index, const std::array<const Walk*, N>& walks, F&& f,
                bool anyOrder = false) {
  const std::vector<std::int64_t> extent = index.shape().vector();
  forEachRun<N>(std::span<const std::int64_t>(extent), walks, std::forward<F>(f), anyOrder);
}

// Copies `region` from one view to another of the same dtype.
void copyViews(const TensorView& src, const TensorView& dst, const ZRange& region);

// ---------------------------------------------------------------- windows

// The window taps k < K whose position base + d*k lies in [0, n): [lo, hi)
// (empty: lo == hi). Pools and the depthwise conv use it to skip padding.
struct TapSpan {
  std::int64_t lo, hi;
};
inline TapSpan tapsInside(std::int64_t base, std::int64_t d, std::int64_t K, std::int64_t n) {
  const std::int64_t lo = base >= 0 ? 0 : (-base + d - 1) / d;
  const std::int64_t hi = base >= n ? 0 : std::min(K, (n - base + d - 1) / d);
  return {lo, std::max(lo, hi)};
}

// ---------------------------------------------------------------- matrix products

// C [M, N] = A [M, K]·B [K, N] for dense row-major float or double blocks (cblas).
void gemmDense(std::int64_t M, std::int64_t N, std::int64_t K, const float* A, const float* B,
               float* C);
void gemmDense(std::int64_t M, std::int64_t N, std::int64_t K, const double* A, const double* B,
               double* C);

// ---------------------------------------------------------------- params
// (intBinding, intsBinding, floatParam, clipAxis, forEachAxisPart: backends/backend.hpp)

// Error (exit 1): "backend cpu: kernel gelu does not support int32 (operation g)".
[[noreturn]] void unsupportedDType(const KernelCall& call, DType dtype);

// For kernels of floating-point types only: calls f(tag) with the storage type
// of the call's output dtype (as dispatch does), or fails with
// unsupportedDType for an integer dtype.
template <class F> void dispatchFloat(const KernelCall& call, F&& f) {
  const DType dtype = call.outputs[0][0].dtype;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T>) {
      unsupportedDType(call, dtype);
    } else {
      f(tag);
    }
  });
}

// Prepares Kernel<T> for the call's floating-point dtype (unsupportedDType
// for an integer one).
template <template <class> class Kernel>
std::unique_ptr<PreparedKernel> prepareFloat(const KernelCall& call) {
  std::unique_ptr<PreparedKernel> prepared;
  dispatchFloat(call, [&](auto tag) {
    prepared = std::make_unique<Kernel<typename decltype(tag)::type>>(call);
  });
  return prepared;
}

// The kernel of a floating-point-only kernel Typed, written once as
// `template <class T> static void run(const KernelCall&)`: runs it with T the
// storage type of the call's output dtype (dispatchFloat).
template <class Typed> void floatKernel(const KernelCall& call) {
  dispatchFloat(call, [&](auto tag) { Typed::template run<typename decltype(tag)::type>(call); });
}

// The IPF of tensor t of input/output port p.
inline const IndexProjection& inputIpf(const KernelCall& call, std::size_t p, std::size_t t = 0) {
  return call.op.application.inputs[p].ipfs[t];
}
inline const IndexProjection& outputIpf(const KernelCall& call, std::size_t p, std::size_t t = 0) {
  return call.op.application.outputs[p].ipfs[t];
}

// y = f(x) for every point of the shard: x of input 0 (storage type From), y
// of output 0 (To), each walked through its IPF. Unit-stride runs get a loop
// of their own, which the compiler vectorizes.
template <class From, class To, class F> void mapElements(const KernelCall& call, F f) {
  const Walk a = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const Walk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  const From* x = a.ptr<From>();
  To* y = r.ptr<To>();
  forEachRun<2>(call.index, {&a, &r},
                [&](const std::array<std::int64_t, 2>& off, std::int64_t n,
                    const std::array<std::int64_t, 2>& st) {
                  const From* xs = x + off[0];
                  To* ys = y + off[1];
                  if (st[0] == 1 && st[1] == 1) {
                    for (std::int64_t j = 0; j < n; ++j) {
                      ys[j] = f(xs[j]);
                    }
                  } else {
                    for (std::int64_t j = 0; j < n; ++j) {
                      ys[j * st[1]] = f(xs[j * st[0]]);
                    }
                  }
                });
}

} // namespace tapestry::backend::cpu
