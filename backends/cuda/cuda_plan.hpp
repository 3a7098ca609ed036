// Host-side planning for the CUDA backend that needs no GPU (so it is unit
// tested everywhere): where plan devices run, how a view is walked by a kernel
// (DeviceWalk), when a region is one contiguous block, and how a row-major
// matrix product maps onto one column-major cuBLASLt call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cuda/kernels.hpp"
#include "backends/products.hpp"
#include "backends/walk.hpp"

namespace tapestry::cuda {

// ---------------------------------------------------------------- devices

// Where one logical plan device runs: a physical GPU and a stream of its own.
struct DevicePlacement {
  int gpu = 0;
  int stream = 0; // the stream's number on that GPU
  friend bool operator==(const DevicePlacement&, const DevicePlacement&) = default;
};

// Plan devices map one-to-one onto GPUs when there are enough GPUs, else all
// onto GPU 0, each with its own stream (SPEC §9, issue 8). gpus >= 1.
std::vector<DevicePlacement> placeDevices(int planDevices, int gpus);

// ---------------------------------------------------------------- walks

ElementType elementType(backend::DType dtype);

// How a view is read over an index box (walkThrough, walkRegion): one
// definition in backends/walk.hpp, shared with the CPU backend.
using ViewWalk = backend::StrideWalk;
using backend::walkRegion;
using backend::walkThrough;

// The kernel walk of a box with `extent` for the operands' strides (one vector
// per operand, each extent.size() long): unit dims dropped, dims every operand
// walks contiguously merged (so a dense copy is one dim). Error when more than
// kMaxWalkDims dims remain.
DeviceWalk makeWalk(std::span<const std::int64_t> extent,
                    std::span<const std::vector<std::int64_t>> strides);

// Whether `region` of a view is one contiguous block in memory (its elements
// in row-major order at unit stride).
bool isContiguous(const backend::TensorView& view, const ZRange& region);

// ---------------------------------------------------------------- cuBLASLt

// How a matrix operand is read in place: the CPU backend's rule
// (backends/backend.hpp), so the GPU reads exactly what cblas would.
using backend::MatrixLayout;
using backend::matrixLayout;
// The leading dimension of a row-major M x N output written in place, or
// nullopt when its layout needs a dense block scattered afterwards.
std::optional<std::int64_t> outputLd(std::int64_t M, std::int64_t N, std::int64_t rsC,
                                     std::int64_t csC);

// One column-major matrix as cuBLASLt describes it.
struct LtMatrix {
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
  std::int64_t ld = 0;
  bool transpose = false; // the operation applied to it
  friend bool operator==(const LtMatrix&, const LtMatrix&) = default;
};

// Row-major C[M, N] = A[M, K]·B[K, N] as the column-major product
// Cᵀ = Bᵀ·Aᵀ: cuBLASLt's A is our B, its B our A, and its C/D our C.
struct LtGemm {
  LtMatrix a; // describes our B
  LtMatrix b; // describes our A
  LtMatrix c; // describes our C
  std::string toString() const;
};
LtGemm planGemm(std::int64_t M, std::int64_t N, std::int64_t K, MatrixLayout A, MatrixLayout B,
                std::int64_t ldc);

// The largest power of two (at most 256) dividing the address: what cuBLASLt's
// heuristic is told about each pointer, since sub-views need not be aligned.
int pointerAlignment(const void* pointer);

// What one cuBLASLt call applies to its sum before the store
// (CUBLASLT_EPILOGUE_*): nothing, the bias (a vector along the rows of
// cuBLASLt's D, our output's columns), GELU's tanh approximation, or the bias
// and then GELU.
enum class LtEpilogue : int { None = 0, Bias = 1, Gelu = 2, GeluBias = 3 };
inline bool epilogueAddsBias(LtEpilogue e) {
  return e == LtEpilogue::Bias || e == LtEpilogue::GeluBias;
}
inline bool epilogueAppliesGelu(LtEpilogue e) {
  return e == LtEpilogue::Gelu || e == LtEpilogue::GeluBias;
}

// The epilogue the backend asks cuBLASLt for on one product (K > 0): the bias
// when the product has one that is packed (stride 1) and 16-byte aligned, and
// GELU when the product's result is to be GELU's tanh approximation of the
// sum (`geluTanh`), in a 16-bit float type, and any bias is the epilogue's.
// A bias it cannot take is broadcast into D first and added with beta = 1,
// and then the GELU is a pass of ours too. float32 and float64 keep the pass:
// cuBLASLt does not say how closely its GELU computes tanh, and their checks
// allow less than a 16-bit type's rounding. Where cuBLASLt has no algorithm
// with the epilogue, the product runs without it, and the backend adds the
// bias and applies GELU itself.
LtEpilogue ltEpilogue(backend::DType dtype, bool bias, std::int64_t biasStride, int biasAlignment,
                      bool geluTanh);

// A clip bound as the kernels take it: the defaults (+-the largest float64)
// and anything beyond are infinities, which clip nothing.
double clipBoundOf(double bound);
// linear_act's activation, as its params say.
EpilogueAct linearActActivation(const graph::Operation& op);

// What of linear_act's epilogue, clip(act(sum + residual), lo, hi), its
// cuBLASLt products take, so that no pass follows them: the tanh GELU alone
// (no residual, no clip: infinite bounds), as the GELU epilogue where ltEpilogue
// allows; or the residual alone (no activation, no clip), read as cuBLASLt's C
// with beta = 1, D = A·B + C (+ the bias epilogue). Otherwise none: one pass
// after the products. cuBLASLt's GELU is the tanh approximation, not the exact
// erf form; its ReLU, max(x, 0), would not keep a NaN as clip does; and it
// does not say whether its GELU applies before or after beta·C.
enum class LinearActByLt : int { None, GeluTanh, Residual };
LinearActByLt linearActByLt(EpilogueAct act, bool residual, double lo, double hi);

// linear_act's residual as each product of `product` (planProduct(call)) reads
// it: the residual view planned as the result (its IPF is the result's), when
// that gives the same products (M, N, K, batch, and as many outer offsets);
// then product i's residual is at outer[i][2] + b·bsC with strides rsC, csC.
// nullopt when it walks otherwise (the residual is then added in a pass).
std::optional<backend::ProductPlan> residualProducts(const backend::KernelCall& call,
                                                     const backend::ProductPlan& product);

// ---------------------------------------------------------------- conv2d

// A view as the conv2d and pooling kernels take it (its first four dims).
ConvView convView(const backend::TensorView& v);
// The element offset from v.data of (a, b, c, d), which v's region holds.
std::int64_t convOffsetOf(const ConvView& v, std::int64_t a, std::int64_t b, std::int64_t c,
                          std::int64_t d);

// A conv2d or conv2d_act shard's parameters: geometry, index range, the bias
// (for the shard whose C, KH and KW ranges start at 0, so that the partial
// sums hold it once), and conv2d_act's residual and clip bounds.
ConvParams convParams(const backend::KernelCall& call);

// A conv2d shard with groups == 1 as products (implicit GEMM): for each batch
// element n of the shard's box, out[n, o, oh, ow] over its O x OH x OW box
// = Σ_k W[o, k]·Col[k, p], k = (c, kh, kw) over its C x KH x KW box and p =
// (oh, ow), both row-major, Col[k, p] the input element that tap k of pixel
// p reads (zero in the padding: im2col, launchIm2col). One product of M x K
// by K x N per n; a bias (p.bias) is added to the rows, and conv2d_act's
// residual and clip follow in a pass.
struct ConvGemm {
  std::int64_t M = 0, K = 0, N = 0; // the box's O, C·KH·KW and OH·OW
  std::int64_t weight0 = 0;         // W[o0, c0, kh0, kw0]'s offset from the weight view's data
  // The weight's rows (o) apart when its k are one unit-stride run (read in
  // place); nullopt: gathered into a dense M x K block first.
  std::optional<std::int64_t> weightRows;
  // The output's rows (o) apart when its p are one unit-stride run (written in
  // place); nullopt: computed into a dense M x N block and scattered.
  std::optional<std::int64_t> outputRows;
};
// nullopt where the shard is no such product: groups > 1 (p.gmul != 0), a
// shard that reads only padding (p.anyInput false), or an empty box.
std::optional<ConvGemm> planConvGemm(const ConvParams& p, const ConvView& weight,
                                     const ConvView& output);

} // namespace tapestry::cuda
