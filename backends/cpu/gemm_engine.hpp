// The engines that run a matmul or linear shard's gemm (backends/products.hpp)
// on the CPU once it is prepared: oneDNN's matmul primitive, OpenBLAS, or
// loops for integers. docs/cpu-products.md says which engine
// runs which product and the measurements behind it. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backends/backend.hpp"
#include "backends/dtype.hpp"
#include "backends/products.hpp"

namespace tapestry::backend::cpu {

using backend::GemmGeometry; // backends/products.hpp

// A gemm made ready once: run() takes the operands' first elements (storage
// type of the engine's dtype) and does no heap allocation of its own.
class GemmEngine {
public:
  GemmEngine() = default;
  GemmEngine(const GemmEngine&) = delete;
  GemmEngine& operator=(const GemmEngine&) = delete;
  virtual ~GemmEngine() = default;
  virtual void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) = 0;
  // B's data changed where the engine reads it (a packed copy is stale).
  virtual void weightsChanged() {}
  // What runs the product ("onednn brg:avx512_core", "openblas sgemm", ...).
  virtual std::string name() const = 0;
};

// How a constant B is used: read in place every run, or copied once into the
// layout the engine prefers (re-copied when the data pointer changes).
enum class WeightUse { InPlace, Packed };

// The engine for `dtype`: oneDNN where it has a fast (non-reference) kernel
// for the dtype and strides (float32, bfloat16), OpenBLAS for float32 where
// oneDNN has none and for float64, float32 blocks through those for float16
// (and bfloat16 without oneDNN), wrapping loops for int32 and int64.
std::unique_ptr<GemmEngine> makeGemmEngine(DType dtype, const GemmGeometry& g, WeightUse weights);

// oneDNN's matmul for float32 or bfloat16 with these strides, or null where
// oneDNN has only its reference kernel (slow) or no kernel at all (float16 on
// CPUs without AVX512-FP16, float64). K must be > 0. gemm_dnnl.cpp.
std::unique_ptr<GemmEngine> makeDnnlGemm(DType dtype, const GemmGeometry& g, WeightUse weights,
                                         int threads = 1);

// The product in `parts` parts (along the batch, n or m) run at once on the
// calling thread's OpenMP team, each part a one-thread oneDNN engine; null
// where oneDNN cannot run a part. gemm_split.cpp.
std::unique_ptr<GemmEngine> makeSplitGemm(DType dtype, const GemmGeometry& g, WeightUse weights,
                                          int parts);

// The threads one product uses: CpuBackend::kernelThreads(), or 1 for a
// product too small to gain from a second thread (the size rule measured by
// bench/bench_products_cpu; docs/cpu-products.md).
int productThreads(const GemmGeometry& g);
// The FLOPs from which productThreads gives a product every kernel thread.
inline constexpr double kParallelFlops = 1 << 26;

// The engine a matmul or linear call would run with (tests and docs ask).
std::string productEngineName(const KernelCall& call);

} // namespace tapestry::backend::cpu
