#include "backends/products.hpp"

#include <string>

#include "backends/walk.hpp"

namespace tapestry::backend {

double GemmGeometry::flops() const {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(N) *
         static_cast<double>(K);
}

std::string GemmGeometry::toString() const {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) on chains of
  // std::string operator+ here.
  std::string out = std::to_string(batch);
  auto pair = [&out](const char* before, std::int64_t a, std::int64_t b) {
    out.append(before).append("[").append(std::to_string(a)).append(", ");
    out.append(std::to_string(b)).append("]");
  };
  pair(" x ", M, K);
  pair(" @ ", K, N);
  pair(" strides A ", rsA, csA);
  pair(" B ", rsB, csB);
  pair(" C ", rsC, csC);
  out.append(" batch strides ").append(std::to_string(bsA)).append("/");
  out.append(std::to_string(bsB)).append("/").append(std::to_string(bsC));
  if (bias) {
    out.append(" + bias");
  }
  return out;
}

namespace {

using Walk = StrideWalk;

const IndexProjection& inputIpf(const KernelCall& call, std::size_t p) {
  return call.op.application.inputs[p].ipfs[0];
}
const IndexProjection& outputIpf(const KernelCall& call, std::size_t p) {
  return call.op.application.outputs[p].ipfs[0];
}

// One loop of a shard's product: its extent and each operand's stride along it.
struct LoopDim {
  std::int64_t extent = 1;
  std::int64_t x = 0, w = 0, r = 0;
};

// A shard's product in the operands' own strides: batch loops (outer first),
// rows m (W does not move), columns n (X does not), depth k (the result does
// not), each operand's element offset from its view's data at the shard's
// corner, and the bias (linear).
struct ShardProduct {
  std::vector<LoopDim> batch;
  LoopDim m, n, k;
  std::int64_t x0 = 0, w0 = 0, r0 = 0;
  bool bias = false;
  std::int64_t bias0 = 0, biasStride = 0;
};

std::int64_t offsetOf(const Walk& walk, const TensorView& view) {
  return (walk.base - view.data) / static_cast<std::int64_t>(dtypeSize(view.dtype));
}

// matmul: index [b..., m, n, k]; every stride from the walks of the IPFs, so
// transposed operands and broadcast batch dims need nothing special.
ShardProduct matmulProduct(const KernelCall& call) {
  const TensorView& X = call.inputs[0][0];
  const TensorView& W = call.inputs[1][0];
  const TensorView& R = call.outputs[0][0];
  const ZRange& idx = call.index;
  const std::size_t nb = idx.rank() - 3;
  const Walk x = walkThrough(X, inputIpf(call, 0), idx);
  const Walk w = walkThrough(W, inputIpf(call, 1), idx);
  const Walk r = walkThrough(R, outputIpf(call, 0), idx);
  ShardProduct p;
  auto dim = [&](std::size_t d) {
    return LoopDim{idx.extent(d), x.stride[d], w.stride[d], r.stride[d]};
  };
  for (std::size_t d = 0; d < nb; ++d) {
    p.batch.push_back(dim(d));
  }
  p.m = dim(nb);
  p.n = dim(nb + 1);
  p.k = dim(nb + 2);
  p.x0 = offsetOf(x, X);
  p.w0 = offsetOf(w, W);
  p.r0 = offsetOf(r, R);
  return p;
}

// linear: index [b..., n]; X [b..., k] (or [..., k, m] with transpose_x), W
// [k, n] (or [n, k]), bias [n]. k is no index dim: its strides are those of the
// dim the params say. The last batch dim is the rows m.
ShardProduct linearProduct(const KernelCall& call) {
  const TensorView& X = call.inputs[0][0];
  const TensorView& W = call.inputs[1][0];
  // linear_act's bias is optional (a bias-free projection's epilogue).
  const bool hasBias = call.hasInput(2);
  const TensorView& R = call.outputs[0][0];
  const ZRange& idx = call.index;
  const std::size_t nb = idx.rank() - 1;
  const bool tx = intBinding(call.op, "transpose_x") != 0;
  const bool tw = intBinding(call.op, "transpose_w") != 0;
  const Walk x = walkThrough(X, inputIpf(call, 0), idx);
  const Walk w = walkThrough(W, inputIpf(call, 1), idx);
  const Walk r = walkThrough(R, outputIpf(call, 0), idx);
  ShardProduct p;
  auto dim = [&](std::size_t d) {
    return LoopDim{idx.extent(d), x.stride[d], w.stride[d], r.stride[d]};
  };
  for (std::size_t d = 0; d + 1 < nb; ++d) {
    p.batch.push_back(dim(d));
  }
  if (nb > 0) {
    p.m = dim(nb - 1);
  }
  p.n = dim(nb);
  p.k = LoopDim{intBinding(call.op, "k"), X.strides[X.rank() - (tx ? 2 : 1)], W.strides[tw ? 1 : 0],
                0};
  p.x0 = offsetOf(x, X);
  p.w0 = offsetOf(w, W);
  p.r0 = offsetOf(r, R);
  if (hasBias) {
    const TensorView& Bias = call.inputs[2][0];
    const Walk b = walkThrough(Bias, inputIpf(call, 2), idx);
    p.bias = true;
    p.bias0 = offsetOf(b, Bias);
    p.biasStride = b.stride[nb];
  }
  return p;
}

// planProduct's steps on a shard's loops (products.hpp).
ProductPlan plan(ShardProduct p) {
  std::vector<LoopDim> batch;
  for (const LoopDim& d : p.batch) {
    if (d.extent == 1) {
      continue;
    }
    if (!batch.empty() && batch.back().x == d.x * d.extent && batch.back().w == d.w * d.extent &&
        batch.back().r == d.r * d.extent) {
      batch.back() = LoopDim{batch.back().extent * d.extent, d.x, d.w, d.r};
    } else {
      batch.push_back(d);
    }
  }
  // Folding must not cost a copy: X's rows must stay readable in place by a
  // BLAS (one unit stride) and the result's writable, where they were.
  auto inPlace = [&](const LoopDim& m) {
    const bool a = matrixLayout(m.extent, p.k.extent, m.x, p.k.x).has_value();
    const bool c = (p.n.extent == 1 || p.n.r == 1) && (m.extent == 1 || m.r >= p.n.extent);
    return std::array<bool, 2>{a, c};
  };
  while (!batch.empty() && batch.back().w == 0) {
    const LoopDim& b = batch.back();
    LoopDim m = p.m;
    if (m.extent == 1) {
      m = LoopDim{b.extent, b.x, 0, b.r};
    } else if (b.x == m.x * m.extent && b.r == m.r * m.extent) {
      m.extent *= b.extent;
    } else {
      break;
    }
    const std::array<bool, 2> before = inPlace(p.m);
    const std::array<bool, 2> after = inPlace(m);
    if ((before[0] && !after[0]) || (before[1] && !after[1])) {
      break;
    }
    p.m = m;
    batch.pop_back();
  }
  ProductPlan plan;
  GemmGeometry& g = plan.gemm;
  g.M = p.m.extent;
  g.N = p.n.extent;
  g.K = p.k.extent;
  g.rsA = p.m.x;
  g.csA = p.k.x;
  g.rsB = p.k.w;
  g.csB = p.n.w;
  g.rsC = p.m.r;
  g.csC = p.n.r;
  g.bias = p.bias;
  g.biasStride = p.biasStride;
  if (!batch.empty()) {
    const LoopDim inner = batch.back();
    batch.pop_back();
    g.batch = inner.extent;
    g.bsA = inner.x;
    g.bsB = inner.w;
    g.bsC = inner.r;
  }
  // The outer loops' offsets, row-major over `batch`.
  plan.outer.push_back({p.x0, p.w0, p.r0});
  for (const LoopDim& d : batch) {
    std::vector<std::array<std::int64_t, 3>> next;
    next.reserve(plan.outer.size() * static_cast<std::size_t>(d.extent));
    for (const auto& o : plan.outer) {
      for (std::int64_t i = 0; i < d.extent; ++i) {
        next.push_back({o[0] + i * d.x, o[1] + i * d.w, o[2] + i * d.r});
      }
    }
    plan.outer = std::move(next);
  }
  plan.bias0 = p.bias0;
  return plan;
}

} // namespace

ProductPlan planProduct(const KernelCall& call) {
  return plan(isLinearKernel(call.op.kernel) ? linearProduct(call) : matmulProduct(call));
}

} // namespace tapestry::backend
