// float32 activations on oneDNN's eltwise primitive where it beats the vector
// loops of vector_math.hpp: gelu (oneDNN's gelu_erf), gelu_tanh and tanh; gelu and tanh 3.5x
// and 3.8x faster than SLEEF's erf and tanh on one core of an Intel Xeon with AVX-512 (1M elements:
// 0.61 against 2.16 ms, 0.40 against 1.51; docs/performance.md). exp and sigmoid were as fast
// either way and stay on the loops. Not a public header.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/backend.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/vector_math.hpp"

namespace tapestry::backend::cpu {

// From these elements a shard goes to oneDNN (below, its per-call setup
// weighs more than the loops' extra time per element).
inline constexpr std::int64_t kDnnlEltwiseFrom = std::int64_t{1} << 14;

// The prepared float32 unary `op` of `call` on oneDNN, when oneDNN runs it
// faster (gelu, tanh), the shard's input and output are each one dense run
// in the same order (`loop` has one run of unit strides) of at least
// kDnnlEltwiseFrom elements, and oneDNN has a fast kernel for it; else null
// (the vector loops run it). On the kernel threads' team from kTeamFrom
// elements, like the loops, each thread over its share in order.
std::unique_ptr<PreparedKernel> prepareDnnlUnary(const KernelCall& call, VUnary op,
                                                 const RunLoop<2>& loop);

} // namespace tapestry::backend::cpu
