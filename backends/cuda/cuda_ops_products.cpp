// The CUDA backend's matrix products: matmul, linear and linear_act as
// cuBLASLt calls planned like the CPU backend's (backends/products.hpp), with
// linear's bias, and linear_act's tanh GELU or residual where cuBLASLt can
// apply them (its epilogues, its C), else a pass after each product.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "backends/cuda/cublaslt.hpp"
#include "backends/cuda/cuda_ops_internal.hpp"
#include "backends/cuda/cuda_plan.hpp"
#include "backends/products.hpp"
#include "core/diag/error.hpp"

namespace tapestry::cuda::ops {

using backend::DType;
using backend::floatParam;
using backend::KernelCall;

namespace {

// A strided rows x cols block copied into dense row-major scratch.
Scratch denseCopy(const KernelContext& c, DType dtype, std::int64_t rows, std::int64_t cols,
                  const std::byte* p, std::int64_t rs, std::int64_t cs) {
  const std::size_t size = backend::dtypeSize(dtype);
  Scratch out(static_cast<std::size_t>(rows * cols) * size, c.gpu, c.stream);
  const std::int64_t extent[2] = {rows, cols};
  const std::vector<std::int64_t> strides[2] = {{rs, cs}, {cols, 1}};
  checkCuda(launchCopy(static_cast<int>(size), p, out.get(), makeWalk(extent, strides), c.stream),
            "gathering a matrix operand");
  return out;
}

// What cuBLASLt did not apply to a product's M x N block at `out`: the tanh
// GELU (`gelu`), and the residual of `residual` (null: none left), each a
// pass in the compute type.
void passesAfter(const KernelContext& c, DType dtype, std::int64_t M, std::int64_t N,
                 std::byte* out, std::int64_t rs, std::int64_t cs, bool gelu,
                 const GemmExtras* residual) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::int64_t extent[2] = {M, N};
  if (gelu) {
    const std::vector<std::int64_t> strides[1] = {{rs, cs}};
    checkCuda(launchEpilogue(elementType(dtype), out, nullptr, makeWalk(extent, strides),
                             EpilogueAct::GeluTanh, -inf, inf, c.stream),
              "GELU after a product");
  }
  if (residual != nullptr && residual->residual != nullptr) {
    const std::vector<std::int64_t> strides[2] = {{rs, cs}, {residual->rsR, residual->csR}};
    checkCuda(launchEpilogue(elementType(dtype), out, residual->residual, makeWalk(extent, strides),
                             EpilogueAct::None, -inf, inf, c.stream),
              "a residual after a product");
  }
}

} // namespace

// C = A·B + extras, with A [M, K], B [K, N], C [M, N] given by device
// pointers and (row, column) strides. Operands cuBLASLt cannot read in place
// are gathered into dense scratch; an output it cannot write in place is
// computed densely and scattered. The bias and the GELU are cuBLASLt's
// epilogue where ltEpilogue allows, and the residual its C (beta = 1) where
// cuBLASLt can read it in place and takes the bias too; where it cannot, or
// has no algorithm with them, the bias is broadcast into the output first
// (beta = 1), and the GELU or the residual is a pass over it.
void gemm(const KernelContext& c, DType dtype, std::int64_t M, std::int64_t N, std::int64_t K,
          const std::byte* A, std::int64_t rsA, std::int64_t csA, const std::byte* B,
          std::int64_t rsB, std::int64_t csB, std::byte* C, std::int64_t rsC, std::int64_t csC,
          const GemmExtras& extras) {
  const std::byte* bias = extras.bias;
  const std::int64_t bs = extras.bs;
  const bool geluTanh = extras.geluTanh;
  const bool columnBias = bias != nullptr && !extras.biasRows; // cuBLASLt's bias epilogue's
  if (M == 0 || N == 0) {
    return;
  }
  if (isInt(dtype)) { // no bias: linear rejects integers
    checkCuda(launchSimpleMatmul(elementType(dtype), M, N, K, A, rsA, csA, B, rsB, csB, C, rsC, csC,
                                 false, c.stream),
              "integer matmul");
    return;
  }
  const std::size_t size = backend::dtypeSize(dtype);
  Scratch denseA;
  Scratch denseB;
  Scratch denseC;
  std::optional<MatrixLayout> la = matrixLayout(M, K, rsA, csA);
  if (!la) {
    denseA = denseCopy(c, dtype, M, K, A, rsA, csA);
    A = denseA.get();
    la = MatrixLayout{false, std::max<std::int64_t>(K, 1)};
  }
  std::optional<MatrixLayout> lb = matrixLayout(K, N, rsB, csB);
  if (!lb) {
    denseB = denseCopy(c, dtype, K, N, B, rsB, csB);
    B = denseB.get();
    lb = MatrixLayout{false, std::max<std::int64_t>(N, 1)};
  }
  std::optional<std::int64_t> ldc = outputLd(M, N, rsC, csC);
  std::byte* out = C;
  std::int64_t outRs = rsC;
  std::int64_t outCs = csC;
  if (!ldc) {
    denseC = Scratch(static_cast<std::size_t>(M * N) * size, c.gpu, c.stream);
    out = denseC.get();
    ldc = N;
    outRs = N;
    outCs = 1;
  }
  const std::int64_t extent[2] = {M, N};
  const std::vector<std::int64_t> outStrides[1] = {{outRs, outCs}};
  auto broadcastBias = [&] {
    const std::vector<std::int64_t> strides[2] = {
        extras.biasRows ? std::vector<std::int64_t>{bs, 0} : std::vector<std::int64_t>{0, bs},
        {outRs, outCs}};
    checkCuda(launchCopy(static_cast<int>(size), bias, out, makeWalk(extent, strides), c.stream),
              "broadcasting a bias");
  };
  bool geluDone = false;
  bool residualDone = false;
  if (K == 0) {
    if (bias != nullptr) {
      broadcastBias();
    } else {
      checkCuda(launchFillIdentity(CombineOp::Sum, elementType(dtype), out,
                                   makeWalk(extent, outStrides), c.stream),
                "zeroing an empty product");
    }
  } else {
    LtProblem problem;
    problem.dtype = dtype;
    problem.tf32 = c.tf32;
    problem.gemm = planGemm(M, N, K, *la, *lb, *ldc);
    problem.a = B;
    problem.b = A;
    problem.d = out;
    problem.epilogue =
        ltEpilogue(dtype, columnBias, bs, columnBias ? pointerAlignment(bias) : 0, geluTanh);
    const std::optional<std::int64_t> ldr =
        extras.residual != nullptr ? outputLd(M, N, extras.rsR, extras.csR) : std::nullopt;
    const bool residualAsC =
        ldr.has_value() && (bias == nullptr || epilogueAddsBias(problem.epilogue));
    bool ran = false;
    if (problem.epilogue != LtEpilogue::None || residualAsC) {
      problem.bias = epilogueAddsBias(problem.epilogue) ? bias : nullptr;
      if (residualAsC) {
        problem.accumulate = true;
        problem.c = extras.residual;
        problem.ldcIn = *ldr;
      }
      ran = c.lt->run(problem, c.workspace, c.workspaceBytes, c.stream);
      geluDone = ran && epilogueAppliesGelu(problem.epilogue);
      residualDone = ran && residualAsC;
    }
    if (!ran) { // no epilogue, or no algorithm with it: the bias broadcast, beta = 1
      if (bias != nullptr) {
        broadcastBias();
      }
      problem.epilogue = LtEpilogue::None;
      problem.bias = nullptr;
      problem.accumulate = bias != nullptr;
      problem.c = nullptr;
      if (!c.lt->run(problem, c.workspace, c.workspaceBytes, c.stream)) {
        // cuBLASLt has no algorithm for this problem (a dtype or layout it does
        // not cover): the simple kernel, on the layouts as planned.
        checkCuda(launchSimpleMatmul(elementType(dtype), M, N, K, A, la->transpose ? 1 : la->ld,
                                     la->transpose ? la->ld : 1, B, lb->transpose ? 1 : lb->ld,
                                     lb->transpose ? lb->ld : 1, out, *ldc, 1, bias != nullptr,
                                     c.stream),
                  "matmul without a cuBLASLt algorithm");
      }
    }
  }
  passesAfter(c, dtype, M, N, out, outRs, outCs, geluTanh && !geluDone,
              residualDone ? nullptr : &extras);
  if (denseC.get() != nullptr) {
    const std::vector<std::int64_t> strides[2] = {{N, 1}, {rsC, csC}};
    checkCuda(launchCopy(static_cast<int>(size), out, C, makeWalk(extent, strides), c.stream),
              "scattering a product");
  }
}

namespace {

// matmul and linear: the shard's gemm and the loops around it as the CPU
// backend plans them (backends/products.hpp): every stride comes from the
// IPFs' walks, so a transposed operand (transpose_x / transpose_w, ONNX Gemm's
// transA / transB) is a transposed layout cuBLASLt reads in place, and a
// broadcast W folds the batch into rows. One cuBLASLt call per batch element
// of the gemm and per outer offset.
// `byLt`: linear_act's epilogue that each product is to apply
// (linearActByLt): GELU's tanh approximation, or its residual where
// residualProducts plans it. Returns what the products applied.
LinearActByLt runProduct(const KernelCall& call, const KernelContext& c, LinearActByLt byLt) {
  const DType dtype = call.outputs[0][0].dtype;
  const bool linear = backend::isLinearKernel(call.op.kernel);
  if (linear && isInt(dtype)) {
    unsupportedDType(call, dtype);
  }
  const backend::ProductPlan plan = backend::planProduct(call);
  const backend::GemmGeometry& g = plan.gemm;
  const auto size = static_cast<std::int64_t>(backend::dtypeSize(dtype));
  const std::byte* x = call.inputs[0][0].data;
  const std::byte* w = call.inputs[1][0].data;
  std::byte* r = call.outputs[0][0].data;
  GemmExtras extras;
  extras.bias =
      g.bias ? call.inputs[2][0].data + plan.bias0 * size : nullptr; // linear_act's is optional
  extras.bs = g.biasStride;
  extras.geluTanh = byLt == LinearActByLt::GeluTanh;
  std::optional<backend::ProductPlan> residual;
  if (byLt == LinearActByLt::Residual) {
    residual = residualProducts(call, plan);
    if (!residual) {
      byLt = LinearActByLt::None; // it walks otherwise than the result: the caller's pass
    }
  }
  for (std::size_t i = 0; i < plan.outer.size(); ++i) {
    const auto& o = plan.outer[i];
    for (std::int64_t b = 0; b < g.batch; ++b) {
      if (residual) {
        const backend::GemmGeometry& rg = residual->gemm;
        extras.residual = call.inputs[3][0].data + (residual->outer[i][2] + b * rg.bsC) * size;
        extras.rsR = rg.rsC;
        extras.csR = rg.csC;
      }
      gemm(c, dtype, g.M, g.N, g.K, x + (o[0] + b * g.bsA) * size, g.rsA, g.csA,
           w + (o[1] + b * g.bsB) * size, g.rsB, g.csB, r + (o[2] + b * g.bsC) * size, g.rsC, g.csC,
           extras);
    }
  }
  return byLt;
}

} // namespace

void productKernel(const KernelCall& call, const KernelContext& c) {
  runProduct(call, c, LinearActByLt::None);
}

// linear_act: linear's cuBLASLt products, then its epilogue,
// clip(act(result + residual), min, max). When that is the tanh GELU alone or
// the residual alone (linearActByLt), each product applies it: cuBLASLt's
// GELU epilogue or its C with beta = 1, or where cuBLASLt cannot, a pass over
// the product's block. Otherwise one pass in place over the shard's output
// box (the result's coordinates are the index's), in the compute type.
// cuBLASLt's GELU is the tanh approximation, not the exact erf form of gelu,
// and its ReLU would not keep NaN, so those stay passes.
void linearActKernel(const KernelCall& call, const KernelContext& c) {
  const bool residual = call.hasInput(3);
  const EpilogueAct act = linearActActivation(call.op);
  const double lo = clipBoundOf(floatParam(call.op, "min"));
  const double hi = clipBoundOf(floatParam(call.op, "max"));
  const LinearActByLt byLt = runProduct(call, c, linearActByLt(act, residual, lo, hi));
  if (call.index.isEmpty() || byLt != LinearActByLt::None) {
    return;
  }
  if (!residual && act == EpilogueAct::None && lo == -std::numeric_limits<double>::infinity() &&
      hi == std::numeric_limits<double>::infinity()) {
    return;
  }
  const std::vector<std::int64_t> extent = call.index.shape().vector();
  const ViewWalk out = walkRegion(call.outputs[0][0], call.index);
  const ViewWalk res = residual ? walkRegion(call.inputs[3][0], call.index) : out;
  const std::vector<std::int64_t> strides[2] = {out.stride, res.stride};
  checkCuda(launchEpilogue(elementType(call.outputs[0][0].dtype), out.base,
                           residual ? res.base : nullptr, makeWalk(extent, strides), act, lo, hi,
                           c.stream),
            what(call) + ": the epilogue");
}

} // namespace tapestry::cuda::ops
