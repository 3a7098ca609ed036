// The engines that run a matmul or linear shard's gemm (backends/products.hpp)
// on the CPU once it is prepared: oneDNN's matmul primitive, OpenBLAS, or
// loops for integers. docs/cpu-products.md says which engine
// runs which product and the measurements behind it. Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "backends/backend.hpp"
#include "backends/dtype.hpp"
#include "backends/products.hpp"

namespace tapestry::backend::cpu {

using backend::GemmGeometry; // backends/products.hpp

// An activation of a product's result (linear_act without a residual), after
// the bias: the exact GELU when `gelu`, then a clip to [lo, hi] (a bound at
// +-the largest float64 clips nothing on that side). An engine that can
// apply it in the product (oneDNN's eltwise post-ops) says so with
// appliesActivation(); the caller applies it otherwise.
struct GemmActivation {
  bool gelu = false;
  double lo = std::numeric_limits<double>::lowest();
  double hi = std::numeric_limits<double>::max();
  bool geluTanh = false; // GELU's tanh approximation instead (never with gelu)
  bool silu = false;     // x * sigmoid(x) instead (never with a GELU)
  bool clips() const {
    return lo > std::numeric_limits<double>::lowest() || hi < std::numeric_limits<double>::max();
  }
  // min 0 and no max.
  bool relu() const { return lo == 0 && hi >= std::numeric_limits<double>::max(); }
  bool any() const { return gelu || geluTanh || silu || clips(); }
};

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
  // The result leaves run() with the GemmActivation it was made with applied.
  virtual bool appliesActivation() const { return false; }
};

// How B is used: read in place every run; a constant B copied once into the
// layout the engine prefers (re-copied when the data pointer changes); or
// copied into that layout on every run (Repacked: makeDnnlGemm's choice for a
// B read in place by many rows, kRepackRows).
enum class WeightUse { InPlace, Packed, Repacked };

// From these rows of A per B (the batch folded in where B is shared), oneDNN
// runs a B that would be read in place as WeightUse::Repacked: reordered into
// its blocked layout by an explicit reorder before every product. Measured on
// a 2-core Intel Xeon with AVX-512, one thread (docs/cpu-products.md): from
// 512 rows the reorder and the packed product beat oneDNN's own handling of
// a plain B on every shape tried, by 1.02-1.18x and by 2.6x on [768, 768] x
// [768, 3072] (63 -> 25 ms); with 256 rows or fewer the copy costs more than
// it saves (0.73-0.83x).
inline constexpr std::int64_t kRepackRows = 512;

// From these rows of A per B, a B read in place whose rows are 2 KiB apart or
// a multiple is copied on every run into a layout with its rows padded
// apart, where oneDNN has no blocked layout for it (CPUs without AVX-512;
// gemm_dnnl.cpp). Measured on such a CPU (docs/cpu-products.md).
inline constexpr std::int64_t kPadInPlaceRows = 32;

// Whether OpenBLAS runs AVX-512 kernels on this CPU (its core is SkylakeX,
// Cooperlake or SapphireRapids, as openblas_get_corename says; the
// OPENBLAS_CORETYPE variable picks another). Then a float32 product of
// kBlasInPlaceFlops or more whose B is read in place, in a call that may use
// one thread, runs on OpenBLAS (with more, OpenBLAS's own threads fight the
// kernel threads' OpenMP team for the cores: a one-device plan of
// bench/cost_truth.py's transformer block took 26 ms instead of 8), which
// on an Intel Xeon with AVX-512 ran such products at oneDNN's speed or up to
// 2.6x faster ([768, 768] x [768, 3072]: 24 ms against 63, one thread;
// docs/cpu-products.md); with its AVX2 kernels (the AMD EPYC there, or any
// CPU without AVX-512) oneDNN was 1.4-1.5x faster and keeps them.
bool blasHasAvx512Kernels();
inline constexpr double kBlasInPlaceFlops = 1 << 26;

// The engine for `dtype`: oneDNN where it has a fast (non-reference) kernel
// for the dtype and strides (float32, bfloat16), OpenBLAS for float32 where
// oneDNN has none and for float64, float32 blocks through those for float16
// (and bfloat16 without oneDNN), wrapping loops for int32 and int64; large
// float32 products with B in place on OpenBLAS where it has AVX-512 kernels.
// With an activation, oneDNN engines apply it (appliesActivation); the others
// leave it to the caller.
std::unique_ptr<GemmEngine> makeGemmEngine(DType dtype, const GemmGeometry& g, WeightUse weights,
                                           const GemmActivation& activation = {});

// oneDNN's matmul for float32 or bfloat16 with these strides, or null where
// oneDNN has only its reference kernel (slow) or no kernel at all (float16 on
// CPUs without AVX512-FP16, float64). K must be > 0. gemm_dnnl.cpp.
std::unique_ptr<GemmEngine> makeDnnlGemm(DType dtype, const GemmGeometry& g, WeightUse weights,
                                         int threads = 1, const GemmActivation& activation = {});

// The product in `parts` parts (along the batch, n or m) run at once on the
// calling thread's OpenMP team, each part a one-thread oneDNN engine; null
// where oneDNN cannot run a part. gemm_split.cpp.
std::unique_ptr<GemmEngine> makeSplitGemm(DType dtype, const GemmGeometry& g, WeightUse weights,
                                          int parts, const GemmActivation& activation = {});

// The threads one product uses: CpuBackend::kernelThreads(), or 1 for a
// product too small to gain from a second thread (the size rule measured by
// bench/bench_products_cpu; docs/cpu-products.md).
int productThreads(const GemmGeometry& g);
// The FLOPs from which productThreads gives a product every kernel thread.
inline constexpr double kParallelFlops = 1 << 26;

// The engine a matmul, linear or linear_act call would run with (tests and
// docs ask); linear_act's says when its epilogue is a pass of its own.
std::string productEngineName(const KernelCall& call);

} // namespace tapestry::backend::cpu
