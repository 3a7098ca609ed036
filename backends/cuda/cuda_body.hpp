// Kernel bodies on the CUDA backend (SPEC §4.1, docs/cuda.md): a kernel with
// a body and no native CUDA kernel runs through the one body evaluator
// (core/expr) with its blocks in device memory. Each block operation is
// planned on the host (body_plan.hpp) and enqueued on the plan device's
// stream: cuBLASLt for '@' (the simple matmul kernel where it has no
// algorithm), the backend's elementwise, combine, copy, cast and where
// kernels, and body_kernels.cu's fill and reduction. Inputs are read from the
// shard's device selections and outputs written into its output selections,
// on the GPU; nothing is staged through the host.
#pragma once

#include "backends/backend.hpp"
#include "backends/cuda/cuda_ops.hpp"

namespace tapestry::cuda {

// Enqueues call.op's body on c.stream (the caller waits for the stream). The
// call's views are in the memory of c.gpu. Errors: the body's located errors
// (exit 1, prefixed "OPERATION (KERNEL): "), or a CUDA failure naming the
// step.
void runBodyOnDevice(const backend::KernelCall& call, const KernelContext& c);

} // namespace tapestry::cuda
