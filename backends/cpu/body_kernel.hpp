// Bodies on a backend (backends/cpu/body_kernel.cpp): one driver that runs a
// kernel's body on a shard with the blocks wherever a backend keeps them, the
// CPU backend's host float64 block operations, and host staging for a backend
// with no block operations of its own.
#pragma once

#include "backends/backend.hpp"
#include "core/expr/body.hpp"

namespace tapestry::backend::cpu {

// Where a backend keeps a body's blocks and how they get there: the block
// operations, reading an input selection into a block and writing an output
// block over its selection (rounded to the view's dtype).
class BodyMemory {
public:
  virtual ~BodyMemory() = default;
  virtual expr::BlockOps& ops() = 0;
  virtual expr::BlockHandle read(const TensorView& view, const ZRange& region) = 0;
  virtual void write(const expr::BodyValue& block, const TensorView& view,
                     const ZRange& region) = 0;
};

// Runs call.op's body on the shard of `call` with its blocks in `memory`: the
// statement walk, shape checks and located errors of core/expr, the numbers
// in memory.ops(). What both the CPU backend (host float64) and the CUDA
// backend (device buffers, backends/cuda/cuda_body.hpp) run.
void runBodyKernelWith(const KernelCall& call, BodyMemory& memory);

// The host float64 block operations with the CPU backend's primitives
// (cblas_dgemm, its dtype conversions). Shared; holds no state.
expr::BlockOps& hostBodyOps();

// Runs call.op's body on the shard of `call`, whose views live on `backend`'s
// devices: copies each input selection to host memory, evaluates the body
// there (float64, cblas_dgemm), and copies each output block back. For a
// backend without block operations of its own.
void runBodyKernelStaged(Backend& backend, const KernelCall& call);

} // namespace tapestry::backend::cpu
