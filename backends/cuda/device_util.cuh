// Device-side helpers shared by the CUDA backend's kernel files (kernels.cu,
// kernels_nn.cu): dispatch on the element type (bool only where values are
// converted), compute types and rounding (Num), and conv views; walk offsets,
// launch sizes and the grid-stride loop are in device_walk.cuh.
// Not a public header: included by .cu files only.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backends/cuda/device_walk.cuh"
#include "backends/cuda/kernels.hpp"

namespace tapestry::cuda {

namespace {

using i64 = std::int64_t;
using u64 = std::uint64_t;

template <class T> struct Tag { using type = T; };

template <class F> cudaError_t dispatch(ElementType type, F&& f) {
  switch (type) {
  case ElementType::Float32:
    return f(Tag<float>{});
  case ElementType::Float64:
    return f(Tag<double>{});
  case ElementType::Float16:
    return f(Tag<__half>{});
  case ElementType::BFloat16:
    return f(Tag<__nv_bfloat16>{});
  case ElementType::Int32:
    return f(Tag<std::int32_t>{});
  case ElementType::Int64:
    return f(Tag<std::int64_t>{});
  case ElementType::Bool: // no arithmetic kernel takes bool (cast: dispatchWithBool)
    break;
  }
  return cudaErrorInvalidValue;
}

// bool as stored: one byte, 0 or 1 (backend::Bool).
struct Bool8 {
  std::uint8_t bits;
};

template <class F> cudaError_t dispatchWithBool(ElementType type, F&& f) {
  return type == ElementType::Bool ? f(Tag<Bool8>{}) : dispatch(type, f);
}

// Num<T>::C is the type T computes in; load / store convert (store rounds to
// nearest even, or wraps integers), as backends/cpu/kernel_util.hpp.
template <class T> struct Num {
  using C = T;
  static __device__ C load(T x) { return x; }
  static __device__ T store(C c) { return c; }
};
template <> struct Num<__half> {
  using C = float;
  static __device__ float load(__half x) { return __half2float(x); }
  static __device__ __half store(float c) { return __float2half_rn(c); }
};
template <> struct Num<__nv_bfloat16> {
  using C = float;
  static __device__ float load(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __nv_bfloat16 store(float c) { return __float2bfloat16_rn(c); }
};
template <> struct Num<Bool8> {
  using C = bool;
  static __device__ bool load(Bool8 x) { return x.bits != 0; }
  static __device__ Bool8 store(bool c) { return Bool8{static_cast<std::uint8_t>(c ? 1 : 0)}; }
};
template <> struct Num<std::int32_t> {
  using C = i64;
  static __device__ i64 load(std::int32_t x) { return x; }
  static __device__ std::int32_t store(i64 c) { // wraps
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<u64>(c)));
  }
};

template <class T> constexpr bool kIsInt = std::is_integral<T>::value;

// dispatch for the kernels that take floating-point types only: an integer
// type is cudaErrorInvalidValue.
template <class F> cudaError_t dispatchFloat(ElementType type, F&& f) {
  return dispatch(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T>) {
      return cudaErrorInvalidValue;
    } else {
      return f(tag);
    }
  });
}

// The output elements of a shard: the box [begin, end) over its first 4 index
// dims, [N, C or O, OH, OW] (conv and pool launches).
inline i64 outputCount(const i64* begin, const i64* end) {
  i64 count = 1;
  for (int d = 0; d < 4; ++d) {
    count *= end[d] - begin[d];
  }
  return count;
}

__device__ inline float mathExp(float x) {
  return expf(x);
}
__device__ inline double mathExp(double x) {
  return exp(x);
}

// SiLU or HardSwish in the compute type C, as the CPU backend's silu and
// hardSwish (kernel_util.hpp): the activations that linear_act's and
// conv2d_act's epilogues apply without a unary op of their own. Any other act
// leaves x as it is (GELU goes through applyUnary, kernels.cu).
template <class C> __device__ C epilogueActivation(EpilogueAct act, C x) {
  if (act == EpilogueAct::Silu) {
    return x * (C(1) / (C(1) + mathExp(-x)));
  }
  if (act == EpilogueAct::HardSwish) {
    const C y = x / C(6) + C(0.5);
    return x * (y < C(0) ? C(0) : (y > C(1) ? C(1) : y));
  }
  return x;
}

__device__ inline i64 convOffset(const ConvView& v, i64 a, i64 b, i64 c, i64 d) {
  return (a - v.start[0]) * v.stride[0] + (b - v.start[1]) * v.stride[1] +
         (c - v.start[2]) * v.stride[2] + (d - v.start[3]) * v.stride[3];
}

} // namespace

} // namespace tapestry::cuda
