// The body evaluator, second half (core/expr/body_internal.hpp): reductions
// (sum, mean, max, min) and data movement (transpose, reshape, cast, concat,
// slice).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "core/expr/body_internal.hpp"

namespace tapestry::expr::body_impl {

BodyValue Evaluator::reduce(const BodyNode& n, Fn fn, const std::vector<const BodyNode*>& args) {
  BodyValue x = blockArg(n, args[0]);
  const std::size_t rank = x.type.shape.size();
  std::vector<bool> reduced(rank, args[1] == nullptr);
  if (args[1] != nullptr) {
    for (std::int64_t a : intsArg(n, args[1], "axis")) {
      const std::size_t d = axisOf(*args[1], a, rank);
      if (reduced[d]) {
        throw ExprError(args[1]->column,
                        n.name + "(): axis " + std::to_string(a) + " is named twice");
      }
      reduced[d] = true;
    }
  }
  bool keepdims = false;
  if (args[2] != nullptr) {
    BodyValue k = eval(*args[2]);
    if (k.kind != Kind::Bool) {
      throw ExprError(args[2]->column,
                      n.name + "(): keepdims must be true or false, got " + describe(k));
    }
    keepdims = k.boolean;
  }
  if (fn == Fn::Mean && !isFloatDType(x.type.dtype)) {
    throw ExprError(n.column, "mean() needs a float block, got " + toString(x.type));
  }
  Shape kept = x.type.shape; // reduced dims as 1
  Shape out;                 // the result's shape
  std::int64_t count = 1;    // elements combined into one
  for (std::size_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      count *= kept[d];
      kept[d] = 1;
      if (keepdims) {
        out.push_back(1);
      }
    } else {
      out.push_back(kept[d]);
    }
  }
  BodyValue r = BodyValue::block(BlockType{out, x.type.dtype});
  if (!numeric()) {
    return r;
  }
  const double init = fn == Fn::Max ? -INFINITY : fn == Fn::Min ? INFINITY : 0.0;
  r.data =
      std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(kept)), init);
  double* pr = r.data->data();
  const double* px = x.data->data();
  auto combine = [fn](double acc, double v) {
    if (fn == Fn::Max) {
      return std::isnan(acc) || std::isnan(v) ? NAN : std::max(acc, v);
    }
    if (fn == Fn::Min) {
      return std::isnan(acc) || std::isnan(v) ? NAN : std::min(acc, v);
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
    const std::size_t rows = r.data->size();
    const auto inner = static_cast<std::size_t>(count);
    for (std::size_t j = 0; j < rows; ++j) {
      double acc = init;
      for (std::size_t i = 0; i < inner; ++i) {
        acc = combine(acc, px[j * inner + i]);
      }
      pr[j] = acc;
    }
  } else {
    forEachElement(x.type.shape, {broadcastStrides(kept, x.type.shape)},
                   [&](std::int64_t i, const std::vector<std::int64_t>& off) {
                     pr[off[0]] = combine(pr[off[0]], px[i]);
                   });
  }
  if (fn == Fn::Mean && count > 0) {
    for (double& v : *r.data) {
      v /= static_cast<double>(count);
    }
  }
  return r;
}

BodyValue Evaluator::transpose(const BodyNode& n, const std::vector<const BodyNode*>& args) {
  BodyValue x = blockArg(n, args[0]);
  const std::size_t rank = x.type.shape.size();
  std::vector<std::int64_t> perm(rank);
  if (args[1] == nullptr) {
    for (std::size_t d = 0; d < rank; ++d) {
      perm[d] = static_cast<std::int64_t>(rank - 1 - d);
    }
  } else {
    perm = intsArg(n, args[1], "perm");
    std::vector<bool> seen(rank, false);
    if (perm.size() != rank) {
      throw ExprError(args[1]->column, "transpose(): perm has " + std::to_string(perm.size()) +
                                           " entries for a block of rank " + std::to_string(rank));
    }
    for (std::int64_t& p : perm) {
      const std::size_t d = axisOf(*args[1], p, rank);
      if (seen[d]) {
        throw ExprError(args[1]->column,
                        "transpose(): perm " + shapeText(perm) + " is not a permutation");
      }
      seen[d] = true;
      p = static_cast<std::int64_t>(d);
    }
  }
  Shape out(rank);
  const Shape own = rowMajor(x.type.shape);
  Shape strides(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    out[d] = x.type.shape[static_cast<std::size_t>(perm[d])];
    strides[d] = own[static_cast<std::size_t>(perm[d])];
  }
  BodyValue r = BodyValue::block(BlockType{out, x.type.dtype});
  if (numeric()) {
    r.data = std::make_shared<std::vector<double>>(x.data->size());
    double* pr = r.data->data();
    const double* px = x.data->data();
    forEachElement(out, {strides}, [&](std::int64_t i, const std::vector<std::int64_t>& off) {
      pr[i] = px[off[0]];
    });
  }
  return r;
}

BodyValue Evaluator::reshape(const BodyNode& n, const std::vector<const BodyNode*>& args) {
  BodyValue x = blockArg(n, args[0]);
  Shape shape = intsArg(n, args[1], "shape");
  const std::int64_t total = elementCount(x.type.shape);
  std::optional<std::size_t> free;
  std::int64_t known = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && !free) {
      free = d;
    } else if (shape[d] < 0) {
      throw ExprError(args[1]->column, "reshape(): shape " + shapeText(shape) +
                                           " has a negative dim (one -1 may stand for the rest)");
    } else {
      known *= shape[d];
    }
  }
  if (free && known > 0 && total % known == 0) {
    shape[*free] = total / known;
    known = total;
  }
  if (known != total) {
    throw ExprError(args[1]->column, "reshape(): a block " + toString(x.type) + " has " +
                                         std::to_string(total) + " elements, shape " +
                                         shapeText(shape) + " has " + std::to_string(known));
  }
  x.type.shape = shape;
  return x; // row-major data is unchanged
}

BodyValue Evaluator::cast(const BodyNode& n, const std::vector<const BodyNode*>& args) {
  BodyValue x = blockArg(n, args[0]);
  BodyValue d = eval(*args[1]);
  if (d.kind != Kind::DType) {
    throw ExprError(args[1]->column,
                    "cast(): dtype must be a dtype name such as float32, got " + describe(d));
  }
  BodyValue r = BodyValue::block(BlockType{x.type.shape, d.dtype});
  if (numeric()) {
    r.data = std::make_shared<std::vector<double>>(*x.data);
    env_.primitives->round(d.dtype, *r.data);
  }
  return r;
}

BodyValue Evaluator::concat(const BodyNode& n, const std::vector<const BodyNode*>& args) {
  BodyValue list = eval(*args[0]);
  if (list.kind == Kind::Block) {
    BodyValue one;
    one.kind = Kind::Blocks;
    one.blocks.push_back(std::move(list));
    list = std::move(one);
  }
  if (list.kind != Kind::Blocks || list.blocks.empty()) {
    throw ExprError(args[0]->column,
                    "concat() needs a non-empty list of blocks, got " + describe(list));
  }
  const BlockType& first = list.blocks[0].type;
  const std::size_t axis = axisOf(*args[1], intArg(n, args[1], "axis"), first.shape.size());
  Shape out = first.shape;
  out[axis] = 0;
  for (const BodyValue& b : list.blocks) {
    Shape s = b.type.shape;
    if (s.size() != first.shape.size() || b.type.dtype != first.dtype) {
      throw ExprError(args[0]->column, "concat(): blocks " + toString(first) + " and " +
                                           toString(b.type) + " differ in rank or dtype");
    }
    out[axis] += s[axis];
    s[axis] = first.shape[axis];
    if (s != first.shape) {
      throw ExprError(args[0]->column, "concat(): blocks " + toString(first) + " and " +
                                           toString(b.type) + " differ off axis " +
                                           std::to_string(axis));
    }
  }
  BodyValue r = BodyValue::block(BlockType{out, first.dtype});
  if (!numeric()) {
    return r;
  }
  r.data = std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(out)));
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
  double* pr = r.data->data();
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const BodyValue& b : list.blocks) {
      const std::int64_t run = b.type.shape[axis] * inner;
      std::copy_n(b.data->data() + o * run, run, pr);
      pr += run;
    }
  }
  return r;
}

BodyValue Evaluator::slice(const BodyNode& n, const std::vector<const BodyNode*>& args) {
  BodyValue x = blockArg(n, args[0]);
  const std::size_t rank = x.type.shape.size();
  const std::size_t axis = axisOf(*args[1], intArg(n, args[1], "axis"), rank);
  const std::int64_t extent = x.type.shape[axis];
  auto bound = [&](const BodyNode* arg, const char* what) {
    std::int64_t v = intArg(n, arg, what);
    if (v < 0) {
      v += extent;
    }
    if (v < 0 || v > extent) {
      throw ExprError(arg->column, "slice(): " + std::string(what) + " " + std::to_string(v) +
                                       " is outside 0.." + std::to_string(extent) + " along axis " +
                                       std::to_string(axis));
    }
    return v;
  };
  const std::int64_t start = bound(args[2], "start");
  const std::int64_t stop = bound(args[3], "stop");
  if (stop < start) {
    throw ExprError(args[3]->column, "slice(): stop " + std::to_string(stop) + " is before start " +
                                         std::to_string(start));
  }
  Shape out = x.type.shape;
  out[axis] = stop - start;
  BodyValue r = BodyValue::block(BlockType{out, x.type.dtype});
  if (numeric()) {
    r.data = std::make_shared<std::vector<double>>(static_cast<std::size_t>(elementCount(out)));
    const Shape own = rowMajor(x.type.shape);
    const double* px = x.data->data() + start * own[axis];
    double* pr = r.data->data();
    forEachElement(out, {own}, [&](std::int64_t i, const std::vector<std::int64_t>& off) {
      pr[i] = px[off[0]];
    });
  }
  return r;
}

} // namespace tapestry::expr::body_impl
