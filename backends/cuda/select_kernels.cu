// where on the GPU (see kernels.hpp): result = condition ? X : Y over a walk of
// four operands. It only selects, so elements move as stored, by size (as
// launchCopy moves them): any dtype, bit for bit, as the CPU backend's where.
#include <cstdint>

#include <cuda_runtime.h>

#include "backends/cuda/device_walk.cuh"
#include "backends/cuda/kernels.hpp"

namespace tapestry::cuda {

namespace {

template <class U>
__global__ void whereKernel(const std::uint8_t* c, const U* x, const U* y, U* r, DeviceWalk w) {
  TAPESTRY_GRID_LOOP(i, w.count) {
    std::int64_t off[4];
    walkOffsets<4>(w, i, off);
    r[off[3]] = c[off[0]] != 0 ? x[off[1]] : y[off[2]];
  }
}

template <class U>
cudaError_t launchWhereOf(const void* c, const void* x, const void* y, void* r, const DeviceWalk& w,
                          cudaStream_t stream) {
  whereKernel<U><<<blocksFor(w.count), kThreads, 0, stream>>>(
      static_cast<const std::uint8_t*>(c), static_cast<const U*>(x), static_cast<const U*>(y),
      static_cast<U*>(r), w);
  return cudaGetLastError();
}

} // namespace

cudaError_t launchWhere(int elementSize, const void* condition, const void* x, const void* y,
                        void* result, const DeviceWalk& w, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  switch (elementSize) {
  case 2:
    return launchWhereOf<std::uint16_t>(condition, x, y, result, w, stream);
  case 4:
    return launchWhereOf<std::uint32_t>(condition, x, y, result, w, stream);
  case 8:
    return launchWhereOf<std::uint64_t>(condition, x, y, result, w, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace tapestry::cuda
