// Device-side helpers shared by the CUDA backend's .cu files (kernels.cu,
// select_kernels.cu): the grid-stride loop, the launch size, and the offsets
// of a DeviceWalk's operands at one walk point (see kernels.hpp).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "backends/cuda/kernels.hpp"

namespace tapestry::cuda {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65535;

// Element offsets of walk point i for the first N operands.
template <int N>
__device__ inline void walkOffsets(const DeviceWalk& w, std::int64_t i, std::int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) {
    off[k] = 0;
  }
  for (int d = w.rank - 1; d >= 0; --d) {
    const std::int64_t e = w.extent[d];
    const std::int64_t c = i % e;
    i /= e;
    for (int k = 0; k < N; ++k) {
      off[k] += c * w.stride[k][d];
    }
  }
}

inline unsigned blocksFor(std::int64_t work) {
  std::int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) {
    blocks = kMaxBlocks;
  }
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

#define TAPESTRY_GRID_LOOP(i, count)                                                               \
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;          \
       i < (count); i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

} // namespace tapestry::cuda
