// The CUDA kernels that kernel bodies need beyond the backend's others
// (kernels.hpp): a fill and a reduction over any set of dims. Launchers only
// enqueue on `stream` and return the launch status. Shared by nvcc (C++17) and
// the host compiler, like kernels.hpp.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels.hpp"

namespace tapestry::cuda {

// y[j] = value for the walk's points (operand 0: y); Bool stores value != 0.
cudaError_t launchBodyFill(ElementType type, void* y, const DeviceWalk& w, double value,
                           cudaStream_t stream);

// One thread per point of `outer` (operands 0: x, 1: y): y = the reduction of
// x at every point of `inner` (operand 0: x, from the outer point's x), in
// row-major order, accumulated in double. op: 0 sum, 1 mean (divided by
// inner.count when it is not 0), 2 max, 3 min (NaN propagates; an empty max
// is -inf, an empty min +inf), 4 prod; 5 argmax, 6 argmin, 7 argmax last, 8
// argmin last: the position in `inner` of the first (last) extreme, NaN the
// extreme (expr::argReplaces). Float32 and Float64 only.
cudaError_t launchBodyReduce(int op, ElementType type, const void* x, void* y,
                             const DeviceWalk& outer, const DeviceWalk& inner, cudaStream_t stream);

} // namespace tapestry::cuda
