// Pooling on the CPU (maxpool2d, avgpool2d, global_avgpool) as prepared
// kernels: on oneDNN where it runs the shard, else loops. bench_conv_cpu
// compares the two. Not a public header.
#pragma once

#include <memory>
#include <string>

#include "backends/backend.hpp"

namespace tapestry::backend::cpu {

// A prepared pooling call that can say what runs it.
class PreparedPool : public PreparedKernel {
public:
  // "onednn jit:avx512_core" (oneDNN's implementation name) or "loops".
  virtual std::string implementation() const = 0;
};

// Fastest: oneDNN where it has more than its reference code for the shard
// (what the registry uses); Loops: the loops always.
enum class PoolImplementation { Fastest, Loops };

// Prepares a checked pooling call.
std::unique_ptr<PreparedPool> preparePool(const KernelCall& call, PoolImplementation choice);

} // namespace tapestry::backend::cpu
