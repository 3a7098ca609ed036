// Device-side helpers shared by the CUDA backend's kernel files (kernels.cu,
// kernels_nn.cu): dispatch on the element type, compute types and rounding
// (Num), walk offsets, the grid-stride loop and conv views.
// Not a public header: included by .cu files only.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backends/cuda/kernels.hpp"

namespace tapestry::cuda {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65535;

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
  }
  return cudaErrorInvalidValue;
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
template <> struct Num<std::int32_t> {
  using C = i64;
  static __device__ i64 load(std::int32_t x) { return x; }
  static __device__ std::int32_t store(i64 c) { // wraps
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<u64>(c)));
  }
};

template <class T> constexpr bool kIsInt = std::is_integral<T>::value;

// Element offsets of walk point i for the first N operands.
template <int N> __device__ inline void walkOffsets(const DeviceWalk& w, i64 i, i64 (&off)[N]) {
  for (int k = 0; k < N; ++k) {
    off[k] = 0;
  }
  for (int d = w.rank - 1; d >= 0; --d) {
    const i64 e = w.extent[d];
    const i64 c = i % e;
    i /= e;
    for (int k = 0; k < N; ++k) {
      off[k] += c * w.stride[k][d];
    }
  }
}

unsigned blocksFor(i64 work) {
  i64 blocks = (work + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) {
    blocks = kMaxBlocks;
  }
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

#define TAPESTRY_GRID_LOOP(i, count)                                                               \
  for (i64 i = static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count);               \
       i += static_cast<i64>(gridDim.x) * blockDim.x)

__device__ inline i64 convOffset(const ConvView& v, i64 a, i64 b, i64 c, i64 d) {
  return (a - v.start[0]) * v.stride[0] + (b - v.start[1]) * v.stride[1] +
         (c - v.start[2]) * v.stride[2] + (d - v.start[3]) * v.stride[3];
}

} // namespace

} // namespace tapestry::cuda
