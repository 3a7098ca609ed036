// Kernels for bodies (body_kernels.hpp): the walks come from body_plan.cpp.
#include "backends/cuda/body_kernels.hpp"

#include <cstdint>

#include "backends/cuda/device_util.cuh"

namespace tapestry::cuda {

namespace {

template <class T> __global__ void bodyFillKernel(T* y, DeviceWalk w, double value) {
  using C = typename Num<T>::C;
  const T stored = Num<T>::store(static_cast<C>(value));
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[1];
    walkOffsets<1>(w, i, off);
    y[off[0]] = stored;
  }
}

template <class T>
__global__ void bodyReduceKernel(int op, const T* x, T* y, DeviceWalk outer, DeviceWalk inner) {
  TAPESTRY_GRID_LOOP(i, outer.count) {
    i64 off[2];
    walkOffsets<2>(outer, i, off);
    const T* from = x + off[0];
    double acc = op == 2 ? -INFINITY : op == 3 ? INFINITY : op == 4 ? 1.0 : 0.0;
    if (op >= 5) { // argmax, argmin (first or last)
      const bool isMax = op == 5 || op == 7;
      const bool last = op >= 7;
      double best = 0.0;
      i64 where = -1;
      for (i64 j = 0; j < inner.count; ++j) {
        i64 at[1];
        walkOffsets<1>(inner, j, at);
        const double v = static_cast<double>(from[at[0]]);
        bool replace = where < 0;
        if (!replace) { // expr::argReplaces
          if (isnan(best)) {
            replace = last && isnan(v);
          } else if (isnan(v)) {
            replace = true;
          } else if (last) {
            replace = isMax ? v >= best : v <= best;
          } else {
            replace = isMax ? v > best : v < best;
          }
        }
        if (replace) {
          best = v;
          where = j;
        }
      }
      y[off[1]] = static_cast<T>(static_cast<double>(where));
      continue;
    }
    for (i64 j = 0; j < inner.count; ++j) {
      i64 at[1];
      walkOffsets<1>(inner, j, at);
      const double v = static_cast<double>(from[at[0]]);
      if (op == 4) {
        acc *= v;
      } else if (op == 2 || op == 3) {
        if (isnan(acc) || isnan(v)) {
          acc = NAN;
        } else {
          acc = op == 2 ? (v > acc ? v : acc) : (v < acc ? v : acc);
        }
      } else {
        acc += v;
      }
    }
    if (op == 1 && inner.count > 0) {
      acc /= static_cast<double>(inner.count);
    }
    y[off[1]] = static_cast<T>(acc);
  }
}

} // namespace

cudaError_t launchBodyFill(ElementType type, void* y, const DeviceWalk& w, double value,
                           cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatchWithBool(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    bodyFillKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(static_cast<T*>(y), w, value);
    return cudaGetLastError();
  });
}

cudaError_t launchBodyReduce(int op, ElementType type, const void* x, void* y,
                             const DeviceWalk& outer, const DeviceWalk& inner,
                             cudaStream_t stream) {
  if (outer.count == 0) {
    return cudaSuccess;
  }
  if (type == ElementType::Float32) {
    bodyReduceKernel<float><<<blocksFor(outer.count), kThreads, 0, stream>>>(
        op, static_cast<const float*>(x), static_cast<float*>(y), outer, inner);
  } else if (type == ElementType::Float64) {
    bodyReduceKernel<double><<<blocksFor(outer.count), kThreads, 0, stream>>>(
        op, static_cast<const double*>(x), static_cast<double*>(y), outer, inner);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

} // namespace tapestry::cuda
