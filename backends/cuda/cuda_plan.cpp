#include "backends/cuda/cuda_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/diag/error.hpp"

namespace tapestry::cuda {

std::vector<DevicePlacement> placeDevices(int planDevices, int gpus) {
  checkInvariant(gpus >= 1, "placeDevices: at least one GPU");
  const int count = std::max(planDevices, 1);
  std::vector<DevicePlacement> out;
  for (int d = 0; d < count; ++d) {
    out.push_back(count <= gpus ? DevicePlacement{d, 0} : DevicePlacement{0, d});
  }
  return out;
}

ElementType elementType(backend::DType dtype) {
  switch (dtype) {
  case backend::DType::Float32:
    return ElementType::Float32;
  case backend::DType::Float64:
    return ElementType::Float64;
  case backend::DType::Float16:
    return ElementType::Float16;
  case backend::DType::BFloat16:
    return ElementType::BFloat16;
  case backend::DType::Int32:
    return ElementType::Int32;
  case backend::DType::Int64:
    return ElementType::Int64;
  case backend::DType::Bool:
    break;
  }
  return ElementType::Bool;
}

DeviceWalk makeWalk(std::span<const std::int64_t> extent,
                    std::span<const std::vector<std::int64_t>> strides) {
  const std::size_t n = strides.size();
  checkInvariant(n >= 1 && n <= static_cast<std::size_t>(kMaxWalkOperands),
                 "makeWalk: 1 to kMaxWalkOperands operands");
  for (const std::vector<std::int64_t>& s : strides) {
    checkInvariant(s.size() == extent.size(), "makeWalk: one stride per dim and operand");
  }
  DeviceWalk w;
  w.count = 1;
  for (std::int64_t e : extent) {
    if (e <= 0) {
      w.count = 0;
      return w;
    }
    w.count *= e;
  }
  // Dims outermost first; a dim merges into the one before it when every
  // operand steps across the pair as across one dim.
  std::vector<std::int64_t> dimExtent;
  std::vector<std::vector<std::int64_t>> dimStride;
  for (std::size_t k = 0; k < extent.size(); ++k) {
    if (extent[k] == 1) {
      continue;
    }
    std::vector<std::int64_t> s(n);
    for (std::size_t i = 0; i < n; ++i) {
      s[i] = strides[i][k];
    }
    bool merge = !dimExtent.empty();
    for (std::size_t i = 0; merge && i < n; ++i) {
      merge = dimStride.back()[i] == s[i] * extent[k];
    }
    if (merge) {
      dimExtent.back() *= extent[k];
      dimStride.back() = s;
    } else {
      dimExtent.push_back(extent[k]);
      dimStride.push_back(s);
    }
  }
  if (dimExtent.size() > static_cast<std::size_t>(kMaxWalkDims)) {
    throw Error("backend cuda: a kernel walks " + std::to_string(dimExtent.size()) +
                " non-contiguous dims, more than the " + std::to_string(kMaxWalkDims) +
                " it supports");
  }
  w.rank = static_cast<int>(dimExtent.size());
  for (std::size_t d = 0; d < dimExtent.size(); ++d) {
    w.extent[d] = dimExtent[d];
    for (std::size_t i = 0; i < n; ++i) {
      w.stride[i][d] = dimStride[d][i];
    }
  }
  return w;
}

namespace {

// Whether a box of `extent` walked at `strides` (row-major, one per dim) is
// one run of unit stride: its walk merges into at most one dim of stride 1.
bool unitRun(std::span<const std::int64_t> extent, std::vector<std::int64_t> strides) {
  const std::vector<std::int64_t> walked[1] = {std::move(strides)};
  const DeviceWalk w = makeWalk(extent, walked);
  return w.count == 0 || w.rank == 0 || (w.rank == 1 && w.stride[0][0] == 1);
}

} // namespace

bool isContiguous(const backend::TensorView& view, const ZRange& region) {
  return unitRun(region.shape().vector(), view.strides);
}

std::optional<std::int64_t> outputLd(std::int64_t M, std::int64_t N, std::int64_t rsC,
                                     std::int64_t csC) {
  if ((N == 1 || csC == 1) && (M == 1 || rsC >= N)) {
    return M == 1 ? std::max<std::int64_t>(N, 1) : rsC;
  }
  return std::nullopt;
}

LtGemm planGemm(std::int64_t M, std::int64_t N, std::int64_t K, MatrixLayout A, MatrixLayout B,
                std::int64_t ldc) {
  // A row-major r x c matrix with leading dimension ld is the column-major
  // c x r matrix with the same ld: its transpose, for free. So cuBLASLt's
  // first operand is our B read as Bᵀ (N x K): stored N x K when B is
  // row-major (no op), stored K x N and transposed when B is column-major.
  auto lt = [](std::int64_t rows, std::int64_t cols, MatrixLayout layout) {
    // rows x cols: the operand as the column-major product needs it.
    return layout.transpose ? LtMatrix{static_cast<std::uint64_t>(cols),
                                       static_cast<std::uint64_t>(rows), layout.ld, true}
                            : LtMatrix{static_cast<std::uint64_t>(rows),
                                       static_cast<std::uint64_t>(cols), layout.ld, false};
  };
  LtGemm g;
  g.a = lt(N, K, B);
  g.b = lt(K, M, A);
  g.c = LtMatrix{static_cast<std::uint64_t>(N), static_cast<std::uint64_t>(M), ldc, false};
  return g;
}

std::string LtGemm::toString() const {
  auto one = [](const LtMatrix& m) {
    return std::to_string(m.rows) + "x" + std::to_string(m.cols) + " ld " + std::to_string(m.ld) +
           (m.transpose ? " T" : " N");
  };
  return "A " + one(a) + ", B " + one(b) + ", C " + one(c);
}

int pointerAlignment(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  int alignment = 1;
  while (alignment < 256 && (address & static_cast<std::uintptr_t>(2 * alignment - 1)) == 0) {
    alignment *= 2;
  }
  return alignment;
}

LtEpilogue ltEpilogue(backend::DType dtype, bool bias, std::int64_t biasStride, int biasAlignment,
                      bool geluTanh) {
  const bool byLt = bias && biasStride == 1 && biasAlignment >= 16;
  if (bias && !byLt) {
    return LtEpilogue::None; // not GELU over beta·C: the bias and the GELU are ours
  }
  if (geluTanh && (dtype == backend::DType::Float16 || dtype == backend::DType::BFloat16)) {
    return byLt ? LtEpilogue::GeluBias : LtEpilogue::Gelu;
  }
  return byLt ? LtEpilogue::Bias : LtEpilogue::None;
}

double clipBoundOf(double bound) {
  constexpr double top = std::numeric_limits<double>::max();
  return bound >= top    ? std::numeric_limits<double>::infinity()
         : bound <= -top ? -std::numeric_limits<double>::infinity()
                         : bound;
}

EpilogueAct linearActActivation(const graph::Operation& op) {
  return backend::intBinding(op, "gelu") != 0        ? EpilogueAct::Gelu
         : backend::intBinding(op, "gelu_tanh") != 0 ? EpilogueAct::GeluTanh
         : backend::intBinding(op, "silu") != 0      ? EpilogueAct::Silu
                                                     : EpilogueAct::None;
}

LinearActByLt linearActByLt(EpilogueAct act, bool residual, double lo, double hi) {
  const bool clips = lo != -std::numeric_limits<double>::infinity() ||
                     hi != std::numeric_limits<double>::infinity();
  if (clips) {
    return LinearActByLt::None;
  }
  if (act == EpilogueAct::GeluTanh && !residual) {
    return LinearActByLt::GeluTanh;
  }
  if (act == EpilogueAct::None && residual) {
    return LinearActByLt::Residual;
  }
  return LinearActByLt::None;
}

std::optional<backend::ProductPlan> residualProducts(const backend::KernelCall& call,
                                                     const backend::ProductPlan& product) {
  if (!call.hasInput(3)) {
    return std::nullopt;
  }
  const std::vector<backend::PortViews> asResult = {call.inputs[3]};
  const backend::ProductPlan r = backend::planProduct(
      backend::KernelCall{call.op, call.index, call.inputs, asResult, call.device});
  const backend::GemmGeometry& a = product.gemm;
  const backend::GemmGeometry& b = r.gemm;
  if (a.M != b.M || a.N != b.N || a.K != b.K || a.batch != b.batch ||
      product.outer.size() != r.outer.size()) {
    return std::nullopt;
  }
  return r;
}

ConvView convView(const backend::TensorView& v) {
  ConvView out;
  out.data = v.data;
  if (v.present()) {
    for (std::size_t d = 0; d < 4; ++d) {
      out.start[d] = v.region.start()[d];
      out.stride[d] = v.strides[d];
    }
  }
  return out;
}

std::int64_t convOffsetOf(const ConvView& v, std::int64_t a, std::int64_t b, std::int64_t c,
                          std::int64_t d) {
  return (a - v.start[0]) * v.stride[0] + (b - v.start[1]) * v.stride[1] +
         (c - v.start[2]) * v.stride[2] + (d - v.start[3]) * v.stride[3];
}

ConvParams convParams(const backend::KernelCall& call) {
  const graph::Operation& op = call.op;
  ConvParams p;
  p.sh = backend::intBinding(op, "sh");
  p.sw = backend::intBinding(op, "sw");
  p.ph = backend::intBinding(op, "ph");
  p.pw = backend::intBinding(op, "pw");
  p.dh = backend::intBinding(op, "dh");
  p.dw = backend::intBinding(op, "dw");
  p.H = backend::intBinding(op, "H");
  p.W = backend::intBinding(op, "W");
  const ZPoint& s = call.index.start();
  const ZPoint& e = call.index.end();
  if (op.kernel == "conv2d_grouped" || op.kernel == "conv2d_grouped_act") {
    // Its index [N, G, OH, OW, KH, KW] holds whole groups: in conv2d's terms
    // output channels OG*g0 to OG*g1 - 1, and c over one group's CG.
    p.og = backend::intBinding(op, "OG");
    p.gmul = backend::intBinding(op, "CG");
    const std::int64_t begin[7] = {s[0], p.og * s[1], s[2], s[3], 0, s[4], s[5]};
    const std::int64_t end[7] = {e[0], p.og * e[1], e[2], e[3], p.gmul, e[4], e[5]};
    std::copy(begin, begin + 7, p.begin);
    std::copy(end, end + 7, p.end);
  } else {
    p.gmul = backend::intBinding(op, "gmul");
    for (std::size_t d = 0; d < 7; ++d) {
      p.begin[d] = s[d];
      p.end[d] = e[d];
    }
  }
  // A shard that sees only padding reads zeros; its input view may be absent.
  p.anyInput = !backend::selection(op.application.inputs[0].ipfs[0], call.index,
                                   op.application.inputs[0].tensors[0].shape)
                    .isEmpty() &&
               call.inputs[0][0].present();
  if (call.inputs.size() > 2 && !call.inputs[2].empty() && call.inputs[2][0].present() &&
      p.begin[4] == 0 && p.begin[5] == 0 && p.begin[6] == 0) {
    const backend::TensorView& bias = call.inputs[2][0];
    p.bias = bias.data;
    p.biasStart = bias.region.start()[0];
    p.biasStride = bias.strides[0];
  }
  if (op.kernel == "conv2d_act" || op.kernel == "conv2d_grouped_act") {
    if (call.hasInput(3)) {
      p.residual = convView(call.inputs[3][0]);
    }
    p.act = backend::intBinding(op, "silu") != 0         ? EpilogueAct::Silu
            : backend::intBinding(op, "hard_swish") != 0 ? EpilogueAct::HardSwish
                                                         : EpilogueAct::None;
    p.lo = clipBoundOf(backend::floatParam(op, "min"));
    p.hi = clipBoundOf(backend::floatParam(op, "max"));
  }
  return p;
}

std::optional<ConvGemm> planConvGemm(const ConvParams& p, const ConvView& weight,
                                     const ConvView& output) {
  std::int64_t e[7];
  for (std::size_t d = 0; d < 7; ++d) {
    e[d] = p.end[d] - p.begin[d];
  }
  if (p.gmul != 0 || !p.anyInput || e[0] <= 0 || e[1] <= 0 || e[2] <= 0 || e[3] <= 0 || e[4] <= 0 ||
      e[5] <= 0 || e[6] <= 0) {
    return std::nullopt;
  }
  ConvGemm g;
  g.M = e[1];
  g.K = e[4] * e[5] * e[6];
  g.N = e[2] * e[3];
  g.weight0 = convOffsetOf(weight, p.begin[1], p.begin[4], p.begin[5], p.begin[6]);
  const std::int64_t taps[3] = {e[4], e[5], e[6]};
  const std::int64_t pixels[2] = {e[2], e[3]};
  if (unitRun(taps, {weight.stride[1], weight.stride[2], weight.stride[3]}) &&
      (g.M == 1 || weight.stride[0] >= g.K)) {
    g.weightRows = g.M == 1 ? g.K : weight.stride[0];
  }
  if (unitRun(pixels, {output.stride[2], output.stride[3]}) &&
      (g.M == 1 || output.stride[1] >= g.N)) {
    g.outputRows = g.M == 1 ? g.N : output.stride[1];
  }
  return g;
}

} // namespace tapestry::cuda
