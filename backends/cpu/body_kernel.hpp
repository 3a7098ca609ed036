// Bodies on any backend, staged through host memory (backends/cpu/body_kernel.cpp).
#pragma once

#include "backends/backend.hpp"

namespace tapestry::backend::cpu {

// Runs call.op's body on the shard of `call`, whose views live on `backend`'s
// devices: copies each input selection to host memory, evaluates the body
// there (float64, cblas_dgemm), and copies each output block back. What a
// backend without a body evaluator of its own (CUDA) runs.
void runBodyKernelStaged(Backend& backend, const KernelCall& call);

} // namespace tapestry::backend::cpu
