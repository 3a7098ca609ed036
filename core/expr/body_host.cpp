// The host float64 implementation of the body evaluator's block operations
// (core/expr/body.hpp, BlockOps): what the CPU backend runs bodies on and what
// `run --check`'s float64 reference uses. Every block is a vector of doubles;
// nothing rounds but a cast (and the backend, when it writes an output).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/expr/body_internal.hpp"

namespace tapestry::expr {

double applyElement(ElementOp op, double x, double y) {
  switch (op) {
  case ElementOp::Add:
    return x + y;
  case ElementOp::Sub:
    return x - y;
  case ElementOp::Mul:
    return x * y;
  case ElementOp::Div:
    return x / y;
  case ElementOp::Pow:
    return std::pow(x, y);
  case ElementOp::Maximum:
  case ElementOp::Minimum:
    if (std::isnan(x) || std::isnan(y)) {
      return std::nan("");
    }
    return op == ElementOp::Maximum ? std::max(x, y) : std::min(x, y);
  case ElementOp::Mod: {
    const double r = std::fmod(x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
  }
  case ElementOp::Fmod:
    return std::fmod(x, y);
  case ElementOp::Equal:
    return x == y ? 1.0 : 0.0;
  case ElementOp::Less:
    return x < y ? 1.0 : 0.0;
  case ElementOp::LessEqual:
    return x <= y ? 1.0 : 0.0;
  case ElementOp::Greater:
    return x > y ? 1.0 : 0.0;
  case ElementOp::GreaterEqual:
    return x >= y ? 1.0 : 0.0;
  case ElementOp::And:
    return x != 0 && y != 0 ? 1.0 : 0.0;
  case ElementOp::Or:
    return x != 0 || y != 0 ? 1.0 : 0.0;
  case ElementOp::Xor:
    return (x != 0) != (y != 0) ? 1.0 : 0.0;
  }
  return 0.0;
}

double applyUnary(UnaryFn fn, double v) {
  switch (fn) {
  case UnaryFn::Exp:
    return std::exp(v);
  case UnaryFn::Log:
    return std::log(v);
  case UnaryFn::Sqrt:
    return std::sqrt(v);
  case UnaryFn::Rsqrt:
    return 1.0 / std::sqrt(v);
  case UnaryFn::Tanh:
    return std::tanh(v);
  case UnaryFn::Erf:
    return std::erf(v);
  case UnaryFn::Abs:
    return std::fabs(v);
  case UnaryFn::Neg:
    return -v;
  case UnaryFn::Sigmoid:
    return 1.0 / (1.0 + std::exp(-v));
  case UnaryFn::Relu:
    return v < 0 ? 0.0 : v;
  case UnaryFn::Gelu:
    return 0.5 * v * (1.0 + std::erf(v * 0.70710678118654752440));
  case UnaryFn::Floor:
    return std::floor(v);
  case UnaryFn::Ceil:
    return std::ceil(v);
  case UnaryFn::Round:
    return std::nearbyint(v); // the default rounding mode: half to even
  case UnaryFn::Sign:
    return v > 0 ? 1.0 : v < 0 ? -1.0 : v; // 0 and NaN stay
  case UnaryFn::Sin:
    return std::sin(v);
  case UnaryFn::Cos:
    return std::cos(v);
  case UnaryFn::Tan:
    return std::tan(v);
  case UnaryFn::Asin:
    return std::asin(v);
  case UnaryFn::Acos:
    return std::acos(v);
  case UnaryFn::Atan:
    return std::atan(v);
  case UnaryFn::Sinh:
    return std::sinh(v);
  case UnaryFn::Cosh:
    return std::cosh(v);
  case UnaryFn::Asinh:
    return std::asinh(v);
  case UnaryFn::Acosh:
    return std::acosh(v);
  case UnaryFn::Atanh:
    return std::atanh(v);
  case UnaryFn::IsNan:
    return std::isnan(v) ? 1.0 : 0.0;
  case UnaryFn::IsInf:
    return std::isinf(v) ? 1.0 : 0.0;
  case UnaryFn::Not:
    return v == 0 ? 1.0 : 0.0;
  }
  return v;
}

BlockHandle hostBlock(std::vector<double> values) {
  return std::make_shared<HostBlock>(std::move(values));
}

const std::vector<double>& hostValues(const BodyValue& block) {
  const auto* host = dynamic_cast<const HostBlock*>(block.data.get());
  if (host == nullptr) {
    throw InternalError("body: a block without host data where host data was expected");
  }
  return host->values();
}

namespace {

using namespace body_impl;

// A number as a one-element operand, or a block's values.
const double* operand(const BodyValue& v) {
  return v.kind == BodyValue::Kind::Block ? hostValues(v).data() : &v.number;
}

Shape shapeOf(const BodyValue& v) {
  return v.kind == BodyValue::Kind::Block ? v.type.shape : Shape{};
}

class HostBlockOps final : public BlockOps {
public:
  explicit HostBlockOps(const BodyPrimitives& primitives) : primitives_(primitives) {}

  BlockHandle elementwise(ElementOp op, const BodyValue& a, const BodyValue& b,
                          std::span<const std::int64_t> outShape) override {
    const Shape out(outShape.begin(), outShape.end());
    const Shape sa = shapeOf(a);
    const Shape sb = shapeOf(b);
    std::vector<double> r(static_cast<std::size_t>(elementCount(out)));
    const double* pa = operand(a);
    const double* pb = operand(b);
    // Fast paths: equal shapes, or a scalar on either side.
    const bool fullA = sa == out;
    const bool fullB = sb == out;
    const bool oneA = elementCount(sa) == 1;
    const bool oneB = elementCount(sb) == 1;
    if ((fullA || oneA) && (fullB || oneB)) {
      const std::size_t stepA = fullA ? 1 : 0;
      const std::size_t stepB = fullB ? 1 : 0;
      for (std::size_t i = 0; i < r.size(); ++i) {
        r[i] = applyElement(op, pa[i * stepA], pb[i * stepB]);
      }
      return hostBlock(std::move(r));
    }
    forEachElement(out, {broadcastStrides(sa, out), broadcastStrides(sb, out)},
                   [&](std::int64_t i, const std::vector<std::int64_t>& off) {
                     r[static_cast<std::size_t>(i)] = applyElement(op, pa[off[0]], pb[off[1]]);
                   });
    return hostBlock(std::move(r));
  }

  BlockHandle unary(UnaryFn fn, const BodyValue& x) override {
    const std::vector<double>& in = hostValues(x);
    std::vector<double> r(in.size());
    std::transform(in.begin(), in.end(), r.begin(), [fn](double v) { return applyUnary(fn, v); });
    return hostBlock(std::move(r));
  }

  BlockHandle reduce(ReduceFn fn, const BodyValue& x, const std::vector<bool>& reduced) override {
    const std::size_t rank = x.type.shape.size();
    Shape kept = x.type.shape; // reduced dims as 1
    std::int64_t count = 1;    // elements combined into one
    for (std::size_t d = 0; d < rank; ++d) {
      if (reduced[d]) {
        count *= kept[d];
        kept[d] = 1;
      }
    }
    const double* px = hostValues(x).data();
    if (fn >= ReduceFn::ArgMax) {
      return argReduce(fn, x, kept, reduced);
    }
    const double init = fn == ReduceFn::Max    ? -INFINITY
                        : fn == ReduceFn::Min  ? INFINITY
                        : fn == ReduceFn::Prod ? 1.0
                                               : 0.0;
    std::vector<double> r(static_cast<std::size_t>(elementCount(kept)), init);
    auto combine = [fn](double acc, double v) {
      if (fn == ReduceFn::Max) {
        return std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
      }
      if (fn == ReduceFn::Min) {
        return std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
      }
      if (fn == ReduceFn::Prod) {
        return acc * v;
      }
      return acc + v;
    };
    // Fast path: the reduced dims are the trailing ones (rows of a matrix).
    std::size_t lead = rank;
    while (lead > 0 && reduced[lead - 1]) {
      --lead;
    }
    if (std::none_of(reduced.begin(), reduced.begin() + static_cast<std::ptrdiff_t>(lead),
                     [](bool b) { return b; })) {
      const auto inner = static_cast<std::size_t>(count);
      for (std::size_t j = 0; j < r.size(); ++j) {
        double acc = init;
        for (std::size_t i = 0; i < inner; ++i) {
          acc = combine(acc, px[j * inner + i]);
        }
        r[j] = acc;
      }
    } else {
      forEachElement(x.type.shape, {broadcastStrides(kept, x.type.shape)},
                     [&](std::int64_t i, const std::vector<std::int64_t>& off) {
                       r[static_cast<std::size_t>(off[0])] =
                           combine(r[static_cast<std::size_t>(off[0])], px[i]);
                     });
    }
    if (fn == ReduceFn::Mean && count > 0) {
      for (double& v : r) {
        v /= static_cast<double>(count);
      }
    }
    return hostBlock(std::move(r));
  }

  // argmax/argmin over the one reduced dim: the first (Last: the last) index
  // of the extreme, a NaN being the extreme (NumPy's rule).
  static BlockHandle argReduce(ReduceFn fn, const BodyValue& x, const Shape& kept,
                               const std::vector<bool>& reduced) {
    const bool isMax = fn == ReduceFn::ArgMax || fn == ReduceFn::ArgMaxLast;
    const bool last = fn == ReduceFn::ArgMaxLast || fn == ReduceFn::ArgMinLast;
    const Shape& shape = x.type.shape;
    const auto axis =
        static_cast<std::size_t>(std::find(reduced.begin(), reduced.end(), true) - reduced.begin());
    const std::int64_t stride = rowMajor(shape)[axis];
    const std::size_t n = static_cast<std::size_t>(elementCount(kept));
    std::vector<double> best(n, 0.0);
    std::vector<double> r(n, -1.0);
    const double* px = hostValues(x).data();
    forEachElement(shape, {broadcastStrides(kept, shape)},
                   [&](std::int64_t i, const std::vector<std::int64_t>& off) {
                     const auto o = static_cast<std::size_t>(off[0]);
                     const double v = px[i];
                     const double at = static_cast<double>((i / stride) % shape[axis]);
                     if (r[o] < 0 || argReplaces(v, best[o], isMax, last)) {
                       best[o] = v;
                       r[o] = at;
                     }
                   });
    return hostBlock(std::move(r));
  }

  BlockHandle matmul(const BodyValue& a, const BodyValue& b, const MatmulShape& s) override {
    std::vector<double> r(static_cast<std::size_t>(elementCount(s.batch) * s.m * s.n));
    const Shape strideA = broadcastStrides(s.batchA, s.batch);
    const Shape strideB = broadcastStrides(s.batchB, s.batch);
    const Shape strideR = rowMajor(s.batch);
    const std::int64_t matA = s.m * s.k;
    const std::int64_t matB = s.k * s.n;
    const std::int64_t matR = s.m * s.n;
    const double* pa = hostValues(a).data();
    const double* pb = hostValues(b).data();
    forEachElement(s.batch, {strideA, strideB, strideR},
                   [&](std::int64_t, const std::vector<std::int64_t>& off) {
                     primitives_.gemm(s.m, s.n, s.k, pa + off[0] * matA, pb + off[1] * matB,
                                      r.data() + off[2] * matR);
                   });
    return hostBlock(std::move(r));
  }

  BlockHandle transpose(const BodyValue& x, std::span<const std::int64_t> perm) override {
    const std::size_t rank = x.type.shape.size();
    Shape out(rank);
    const Shape own = rowMajor(x.type.shape);
    Shape strides(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      out[d] = x.type.shape[static_cast<std::size_t>(perm[d])];
      strides[d] = own[static_cast<std::size_t>(perm[d])];
    }
    const std::vector<double>& in = hostValues(x);
    std::vector<double> r(in.size());
    forEachElement(out, {strides}, [&](std::int64_t i, const std::vector<std::int64_t>& off) {
      r[static_cast<std::size_t>(i)] = in[static_cast<std::size_t>(off[0])];
    });
    return hostBlock(std::move(r));
  }

  BlockHandle cast(const BodyValue& x, std::string_view dtype) override {
    std::vector<double> r = hostValues(x);
    primitives_.round(dtype, r);
    return hostBlock(std::move(r));
  }

  BlockHandle concat(std::span<const BodyValue> blocks, std::size_t axis,
                     std::span<const std::int64_t> out) override {
    std::vector<double> r(static_cast<std::size_t>(elementCount(Shape(out.begin(), out.end()))));
    // Rows above the axis, each a run of (extent along axis x inner) per block.
    std::int64_t outer = 1;
    std::int64_t inner = 1;
    for (std::size_t d = 0; d < out.size(); ++d) {
      if (d < axis) {
        outer *= out[d];
      } else if (d > axis) {
        inner *= out[d];
      }
    }
    double* pr = r.data();
    for (std::int64_t o = 0; o < outer; ++o) {
      for (const BodyValue& b : blocks) {
        const std::int64_t run = b.type.shape[axis] * inner;
        std::copy_n(hostValues(b).data() + o * run, run, pr);
        pr += run;
      }
    }
    return hostBlock(std::move(r));
  }

  BlockHandle slice(const BodyValue& x, std::size_t axis, std::int64_t start,
                    std::int64_t stop) override {
    Shape out = x.type.shape;
    out[axis] = stop - start;
    std::vector<double> r(static_cast<std::size_t>(elementCount(out)));
    const Shape own = rowMajor(x.type.shape);
    const double* px = hostValues(x).data() + start * own[axis];
    forEachElement(out, {own}, [&](std::int64_t i, const std::vector<std::int64_t>& off) {
      r[static_cast<std::size_t>(i)] = px[off[0]];
    });
    return hostBlock(std::move(r));
  }

  BlockHandle where(const BodyValue& c, const BodyValue& a, const BodyValue& b,
                    std::span<const std::int64_t> outShape) override {
    const Shape out(outShape.begin(), outShape.end());
    std::vector<double> r(static_cast<std::size_t>(elementCount(out)));
    const double condition = c.boolean ? 1.0 : 0.0;
    const double* pc = c.kind == BodyValue::Kind::Block ? hostValues(c).data() : &condition;
    const double* pa = operand(a);
    const double* pb = operand(b);
    forEachElement(out,
                   {broadcastStrides(shapeOf(c), out), broadcastStrides(shapeOf(a), out),
                    broadcastStrides(shapeOf(b), out)},
                   [&](std::int64_t i, const std::vector<std::int64_t>& off) {
                     r[static_cast<std::size_t>(i)] = pc[off[0]] != 0.0 ? pa[off[1]] : pb[off[2]];
                   });
    return hostBlock(std::move(r));
  }

private:
  const BodyPrimitives& primitives_;
};

} // namespace

std::unique_ptr<BlockOps> hostBlockOps(const BodyPrimitives& primitives) {
  return std::make_unique<HostBlockOps>(primitives);
}

} // namespace tapestry::expr
