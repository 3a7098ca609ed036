// The native CUDA kernels of the CUDA backend (kernels.cu), behind plain launch
// functions the host code (cuda_backend.cpp, C++20) calls. Every launcher only
// enqueues work on `stream` and returns the launch status; the caller checks it
// and synchronizes. Shared by nvcc (C++17) and the host compiler, so this header
// uses no C++20 and no CUDA types beyond cudaStream_t / cudaError_t.
//
// Most kernels walk an index box: operand i of index point p (p counted from
// the box's start) sits at base_i + Σ_k stride[i][k]·p_k elements, exactly as
// the CPU backend's walks (backends/cpu/kernel_util.hpp) read views.
#pragma once

#include <cstdint>
#include <limits>

#include <cuda_runtime_api.h>

namespace tapestry::cuda {

constexpr int kMaxWalkDims = 12;
constexpr int kMaxWalkOperands = 4;

// Element types as the kernels see them (the order of backend::DType). Bool
// (one byte, 0 or 1) moves with launchCopy and converts with launchCast; the
// other typed launchers refuse it with cudaErrorInvalidValue.
enum class ElementType : int { Float32, Float64, Float16, BFloat16, Int32, Int64, Bool };

// An index box of `count` points walked by up to kMaxWalkOperands operands,
// dims ordered outermost first (row-major point order). Built on the host by
// makeWalk (cuda_plan.hpp), which drops unit dims and merges contiguous ones.
struct DeviceWalk {
  int rank = 0;
  std::int64_t count = 0; // product of the extents (0: nothing to do)
  std::int64_t extent[kMaxWalkDims] = {};
  std::int64_t stride[kMaxWalkOperands][kMaxWalkDims] = {};
};

// The last six read float params: Clip p0 = min, p1 = max; the *Scalar ops p0 = value.
enum class UnaryOp : int {
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
  // From here to Not: for kernel bodies, floats only (IsNan, IsInf and Not give 1 or 0).
  Floor,
  Ceil,
  Round, // half to even
  Sign,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  IsNan,
  IsInf,
  Not,
  Clip,
  AddScalar,
  MulScalar,
  RsubScalar,
  RdivScalar,
  PowScalar,
  DivScalar,
  GeluTanh, // x/2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  Silu      // x * sigmoid(x)
};
// Add .. Pow also native on integers; the rest, for kernel bodies, on floats
// only: Mod has the divisor's sign, Fmod the dividend's; the comparisons and
// logical ops (on 0/1 values) give 1 or 0.
enum class BinaryOp : int {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Mod,
  Fmod,
  Equal,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  And,
  Or,
  Xor
};
enum class CombineOp : int { Sum, Max, Min, Prod }; // metakernel::Combine
enum class ReduceOp : int { Sum, Mean, Max, Min, Prod };

// y = op(x); operands 0: x, 1: y; p0, p1: the op's float params (UnaryOp).
cudaError_t launchUnary(UnaryOp op, ElementType type, const void* x, void* y, const DeviceWalk& w,
                        cudaStream_t stream, double p0 = 0, double p1 = 0);
// y = op(a, b); operands 0: a, 1: b, 2: y (a zero stride broadcasts).
cudaError_t launchBinary(BinaryOp op, ElementType type, const void* a, const void* b, void* y,
                         const DeviceWalk& w, cudaStream_t stream);
// The activation of linear_act's epilogue: none, the exact GELU, its tanh
// approximation, or SiLU (x * sigmoid(x)).
enum class EpilogueAct : int { None, Gelu, GeluTanh, Silu, HardSwish };
// linear_act's and conv2d_act's epilogue in one pass: y = clip(act(y + residual), lo, hi) in
// the compute type, rounded once (no residual when null; infinities clip
// nothing, NaN stays NaN, a lo above hi gives hi); operands 0: y, 1:
// residual. Floats only.
cudaError_t launchEpilogue(ElementType type, void* y, const void* residual, const DeviceWalk& w,
                           EpilogueAct act, double lo, double hi, cudaStream_t stream);
// result = condition ? x : y (select_kernels.cu); operands 0: condition (bool
// bytes), 1: x, 2: y, 3: result, all elementSize bytes (2, 4 or 8) but the
// condition; elements are copied as stored.
cudaError_t launchWhere(int elementSize, const void* condition, const void* x, const void* y,
                        void* result, const DeviceWalk& w, cudaStream_t stream);
// y = convert(x) with the CPU backend's rules; operands 0: x, 1: y.
cudaError_t launchCast(ElementType from, ElementType to, const void* x, void* y,
                       const DeviceWalk& w, cudaStream_t stream);
// Bitwise element copy (elementSize 1, 2, 4 or 8); operands 0: x, 1: y.
cudaError_t launchCopy(int elementSize, const void* x, void* y, const DeviceWalk& w,
                       cudaStream_t stream);
// dst = combine(dst, src); operands 0: dst, 1: src.
cudaError_t launchCombine(CombineOp op, ElementType type, void* dst, const void* src,
                          const DeviceWalk& w, cudaStream_t stream);
// Every walked element of dst = the monoid's identity; operand 0: dst.
cudaError_t launchFillIdentity(CombineOp op, ElementType type, void* dst, const DeviceWalk& w,
                               cudaStream_t stream);

// One output point per walk point (operands 0: x at the axis start, 1: y): y =
// the reduction of x[j·axisStride], j < axisLength, in increasing j (the CPU
// backend's order); Mean divides by `divisor` (the full axis length).
cudaError_t launchReduce(ReduceOp op, ElementType type, const void* x, void* y, const DeviceWalk& w,
                         std::int64_t axisLength, std::int64_t axisStride, std::int64_t divisor,
                         cudaStream_t stream);

// One row per walk point (operands 0: x, 1: y at the row start), n elements
// apart by sx / sy: a numerically stable softmax (a warp per row).
cudaError_t launchSoftmax(ElementType type, const void* x, void* y, const DeviceWalk& w,
                          std::int64_t n, std::int64_t sx, std::int64_t sy, cudaStream_t stream);
// The same rows normalized over d elements in double (two passes), then
// y = norm·gamma[i] + beta[i] (gamma / beta: element 0 and stride). A null
// beta is rmsnorm: no mean taken away, no shift.
cudaError_t launchLayernorm(ElementType type, const void* x, void* y, const void* gamma,
                            std::int64_t gammaStride, const void* beta, std::int64_t betaStride,
                            const DeviceWalk& w, std::int64_t d, std::int64_t sx, std::int64_t sy,
                            double eps, cudaStream_t stream);

// embedding: one walk point per output element (operands 0: the index element,
// 1: the output element, 2: the table column at row 0). An index outside
// [0, rows) sets *badPoint to the smallest such walk point (atomicMin; the
// caller initializes it to INT64_MAX) and writes nothing there.
// With wrapNegative (gather), an index in [-rows, 0) reads row index + rows.
cudaError_t launchEmbedding(ElementType type, ElementType indexType, const void* table,
                            std::int64_t tableRowStride, std::int64_t rows, const void* indices,
                            void* out, const DeviceWalk& w, unsigned long long* badPoint,
                            cudaStream_t stream, bool wrapNegative = false);

// batchnorm: y = (x - mean[c]) · scale[c] / sqrt(var[c] + eps) + bias[c];
// operands 0: x, 1: y, 2: the point's channel relative to the shard's first
// (stride 1 along the channel dim, 0 elsewhere). vectors[4] are scale, bias,
// mean and var at the shard's first channel, with their element strides.
cudaError_t launchBatchnorm(ElementType type, const void* x, void* y, const DeviceWalk& w,
                            const void* const (&vectors)[4], const std::int64_t (&strides)[4],
                            double eps, cudaStream_t stream);

// C[M, N] = A[M, K]·B[K, N] (+ C when accumulate, floats only) for any dtype
// and strides, a thread per element of C: the integer products (wrapping, like
// the CPU backend) and the fallback where cuBLASLt has no algorithm.
cudaError_t launchSimpleMatmul(ElementType type, std::int64_t M, std::int64_t N, std::int64_t K,
                               const void* A, std::int64_t rsA, std::int64_t csA, const void* B,
                               std::int64_t rsB, std::int64_t csB, void* C, std::int64_t rsC,
                               std::int64_t csC, bool accumulate, cudaStream_t stream);

// A 4-d view for conv2d: the element at (a, b, c, d) of a region starting at
// start[] sits at data + Σ (coord - start)·stride.
struct ConvView {
  const void* data = nullptr;
  std::int64_t start[4] = {};
  std::int64_t stride[4] = {};
};
struct ConvParams {
  std::int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, H = 0, W = 0;
  // Input channel (o div og)*gmul + c: conv2d's groups == 1 (gmul 0, every
  // channel), its depthwise style (og 1) and conv2d_grouped (og = O/groups).
  std::int64_t gmul = 0, og = 1;
  std::int64_t begin[7] = {}; // the shard's index range [N, O, OH, OW, C/groups, KH, KW]
  std::int64_t end[7] = {};
  bool anyInput = true; // false: the shard reads only padding (zeros)
  // bias[o] at bias + (o - biasStart)·biasStride starts each sum; null when the
  // operation has none or the shard's (C, KH, KW) range does not start at 0.
  const void* bias = nullptr;
  std::int64_t biasStart = 0, biasStride = 1;
  // conv2d_act's epilogue, applied to the sum before the store: + residual
  // (a view of the output's shape; data null when none), the activation
  // (None, Silu or HardSwish), then a clip to [lo, hi] (infinities clip
  // nothing; NaN stays NaN, a lo above hi gives hi).
  ConvView residual;
  EpilogueAct act = EpilogueAct::None;
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
};
// Direct conv2d (NCHW / OIHW cross-correlation, optional bias) and
// conv2d_act: a thread per output element of the shard sums its part of (C,
// KH, KW) in the compute type, applies the epilogue and stores once.
cudaError_t launchConv2d(ElementType type, const ConvView& input, const ConvView& weight,
                         const ConvView& output, const ConvParams& params, cudaStream_t stream);

// conv2d's im2col for batch element n of a shard with groups == 1 (gmul 0):
// col[k·N + q] = input[n, c, sh·oh + dh·kh - ph, sw·ow + dw·kw - pw], zero
// outside [0, H) x [0, W), for k = (c, kh, kw) over the shard's C x KH x KW box
// and q = (oh, ow) over its OH x OW box, both row-major (N = OH·OW of the
// box); col dense, of the input's type (planConvGemm's Col).
cudaError_t launchIm2col(ElementType type, const ConvView& input, std::int64_t n,
                         const ConvParams& params, void* col, cudaStream_t stream);

// Windowed pooling over a 4-d view: a thread per output element (n, c, oh, ow)
// of the shard reads input (n, c, sh*oh + dh*kh - ph, sw*ow + dw*kw - pw) for
// kh < KH, kw < KW inside [0, H) x [0, W), and stores the max (max: true) or
// the sum over `divisor` (0: the number of elements read). global_avgpool is
// the window of the shard's (h, w) box: sh = sw = 0, ph = -h0, pw = -w0.
struct PoolParams {
  bool max = true;
  std::int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, KH = 1, KW = 1, H = 0, W = 0;
  std::int64_t divisor = 0;
  std::int64_t begin[4] = {}; // the shard's output range [N, C, OH, OW]
  std::int64_t end[4] = {};
};
cudaError_t launchPool2d(ElementType type, const ConvView& input, const ConvView& output,
                         const PoolParams& params, cudaStream_t stream);

} // namespace tapestry::cuda
