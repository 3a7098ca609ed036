// Vectorised float32 loops for the CPU kernels (elementwise, reductions,
// softmax, layernorm), compiled once per x86-64 ISA level and chosen at run
// time from the CPU's features, so one binary runs on any x86-64 and uses the
// widest vectors it has: SSE2 (every x86-64), AVX2 with FMA, AVX-512 F.
// exp, log, tanh, erf and pow are SLEEF's u10 functions (within 1.0 ULP of the
// exact result, on every level); sqrt and division are the hardware's, exactly
// rounded. The loops themselves are written here because no library offers
// them at a call cost of a few nanoseconds: oneDNN's eltwise primitive takes
// about 150 ns per call before any work, allocates its argument map and has
// no erf (docs/cost-model.md, bench/bench_eltwise_cpu).
//
// Each level lives in its own translation unit (vector_math_sse2.cpp,
// _avx2.cpp, _avx512.cpp, built from vector_math_impl.hpp with that level's
// compiler flags); nothing else is compiled with those flags. Kernels take
// the table of the active level (cpu_isa.hpp) when they are prepared.
#pragma once

#include <cstdint>

#include "backends/cpu/cpu_isa.hpp"

namespace tapestry::backend::cpu {

// y = f(x) (with params p, q where the op has them).
enum class VUnary : std::uint8_t {
  Relu,
  Gelu,
  Tanh,
  Exp,
  Sigmoid,
  Neg,
  Erf,
  Sqrt,
  Reciprocal,
  Log,
  Abs,
  Clip,        // min(max(x, p), q), NaN stays NaN
  AddScalar,   // x + p
  MulScalar,   // x * p
  RsubScalar,  // p - x
  RdivScalar,  // p / x
  PowScalar,   // pow(x, p)
  DivScalar,   // x / p
  GeluTanh,    // x/2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  Silu,        // x * sigmoid(x)
  HardSigmoid, // min(1, max(0, x * p + q)), NaN stays NaN
  HardSwish,   // x * min(1, max(0, x / 6 + 1/2)), NaN stays NaN
};
inline constexpr int kVUnaryCount = 22;

// y = f(a, b). MaxNan is the reductions' max: b where b > a or b is NaN.
enum class VBinary : std::uint8_t { Add, Sub, Mul, Div, Pow, MaxNan };
inline constexpr int kVBinaryCount = 6;

// Which operand of a binary loop is one value read at [0] (NumPy broadcast of
// a scalar along the run), if any.
enum class VScalar : std::uint8_t { None, A, B };

// panelProduct's layout of W: panels of kPanelWidth columns, pairs of them
// per pass, and the most rows of x one call takes.
inline constexpr std::int64_t kPanelWidth = 16;
inline constexpr std::int64_t kMaxPanelRows = 8;

// The panels of a k x n W: ceil(n / 32) pairs of panels.
inline std::int64_t panelCount(std::int64_t n) {
  return (n + 2 * kPanelWidth - 1) / (2 * kPanelWidth) * 2;
}
// Packs W[i][j] = at(i, j) (i < k, j < n) into panelCount(n) panels for
// panelProduct, columns past n zero; `out` holds panelCount(n) * k *
// kPanelWidth floats.
template <class At> void packPanels(std::int64_t k, std::int64_t n, float* out, At&& at) {
  for (std::int64_t b = 0; b < panelCount(n); ++b) {
    for (std::int64_t i = 0; i < k; ++i) {
      float* line = out + (b * k + i) * kPanelWidth;
      for (std::int64_t c = 0; c < kPanelWidth; ++c) {
        const std::int64_t j = b * kPanelWidth + c;
        line[c] = j < n ? at(i, j) : 0.0f;
      }
    }
  }
}

// One level's loops over n contiguous floats. Outputs may be the inputs
// themselves (in place), never partly overlapping them.
struct VectorKernels {
  CpuIsa isa;
  void (*unary[kVUnaryCount])(const float* x, float* y, std::int64_t n, float p, float q);
  void (*binary[kVBinaryCount][3])(const float* a, const float* b, float* y, std::int64_t n);
  // Reductions of x[0..n): the sum, and the max (NaN when any element is NaN;
  // -inf for n == 0).
  float (*sum)(const float* x, std::int64_t n);
  float (*max)(const float* x, std::int64_t n);
  // The same for `rows` rows at once: y[r * ldy] = sum (max) of x[r * ldx +
  // 0..n) for r < rows.
  void (*rowSums)(const float* x, std::int64_t ldx, std::int64_t n, std::int64_t rows, float* y,
                  std::int64_t ldy);
  void (*rowMaxes)(const float* x, std::int64_t ldx, std::int64_t n, std::int64_t rows, float* y,
                   std::int64_t ldy);
  // Down columns: y[j] = x[j] + x[ldk + j] + ... (or their max, NaN as
  // VBinary::MaxNan) over m >= 1 rows, in row order, for j < n; y may not
  // overlap x. The same numbers as folding the rows with binary[Add] (MaxNan).
  void (*columnSums)(const float* x, std::int64_t ldk, std::int64_t m, std::int64_t n, float* y);
  void (*columnMaxes)(const float* x, std::int64_t ldk, std::int64_t m, std::int64_t n, float* y);
  // The dot product of a[0..n) and b[0..n) (two vector accumulators).
  float (*dot)(const float* a, const float* b, std::int64_t n);
  // y[r * ldy + j] = sum over i < k of x[r * ldx + i] * W[i][j], for rows r <
  // `rows` (at most kMaxPanelRows) and the columns j of panels [first, end),
  // where `panels` holds W in panels of kPanelWidth columns (panel b at
  // panels + b * k * kPanelWidth, W[i][b * kPanelWidth + c] at [i *
  // kPanelWidth + c]) and first and end are even (packPanels: a pair of
  // panels is one pass on AVX-512). W is read once per kPanelRows rows
  // (8 on AVX-512, 4 on AVX2, 2 on SSE2): for few rows against a W from
  // memory (conv_panels.cpp).
  void (*panelProduct)(const float* panels, std::int64_t k, std::int64_t first, std::int64_t end,
                       const float* x, std::int64_t ldx, std::int64_t rows, float* y,
                       std::int64_t ldy);
  // One softmax row: y = exp(x - max x) / sum, in three passes.
  void (*softmax)(const float* x, float* y, std::int64_t n);
  // One layernorm row: y = (x - mean) / sqrt(var + eps) * gamma + beta, two
  // passes for the moments (float accumulators, 4 vectors wide).
  void (*layernorm)(const float* x, float* y, std::int64_t n, const float* gamma, const float* beta,
                    float eps);
  // One rmsnorm row: y = x / sqrt(mean(x^2) + eps) * gamma, the same passes
  // without the mean.
  void (*rmsnorm)(const float* x, float* y, std::int64_t n, const float* gamma, float eps);
  // A transposing copy of 4- or 8-byte elements, bitwise (any dtype of that
  // size): to[a * toStride + b] = from[b * fromStride + a] for a < na, b < nb,
  // strides in elements. In register tiles (8 x 8 4-byte elements with AVX,
  // 4 x 4 with SSE2) inside blocks of 32 x 32: element by element, a
  // transpose's heads' k^T ran at a third of the predicted copy rate.
  void (*transpose4)(const void* from, std::int64_t fromStride, void* to, std::int64_t toStride,
                     std::int64_t na, std::int64_t nb);
  void (*transpose8)(const void* from, std::int64_t fromStride, void* to, std::int64_t toStride,
                     std::int64_t na, std::int64_t nb);
};

// The active level's table (activeIsa()), and any level's (InternalError
// when the CPU lacks it).
const VectorKernels& vectorKernels();
const VectorKernels& vectorKernels(CpuIsa isa);

// Each level's table, defined in its own translation unit; call only where
// the CPU has that level.
const VectorKernels& vectorKernelsSse2();
const VectorKernels& vectorKernelsAvx2();
const VectorKernels& vectorKernelsAvx512();

} // namespace tapestry::backend::cpu
