// The body evaluator, second half (core/expr/body_internal.hpp): reductions
// (sum, mean, max, min) and data movement (transpose, reshape, cast, concat,
// slice): their arguments and shapes here, their numbers in BlockOps.
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
  const bool arg = fn == Fn::ArgMax || fn == Fn::ArgMin;
  bool last = false;
  if (arg) {
    if (std::count(reduced.begin(), reduced.end(), true) != 1) {
      throw ExprError(args[1]->column, n.name + "() needs exactly one axis");
    }
    if (args[3] != nullptr) {
      BodyValue l = eval(*args[3]);
      if (l.kind != Kind::Bool) {
        throw ExprError(args[3]->column,
                        n.name + "(): last must be true or false, got " + describe(l));
      }
      last = l.boolean;
    }
  }
  if (fn == Fn::Mean && !isFloatDType(x.type.dtype)) {
    throw ExprError(n.column, "mean() needs a float block, got " + toString(x.type));
  }
  Shape out; // the result's shape
  for (std::size_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out.push_back(x.type.shape[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  BodyValue r = BodyValue::block(BlockType{out, arg ? "int64" : x.type.dtype});
  if (!numeric()) {
    return r;
  }
  ReduceFn how = ReduceFn::Min;
  switch (fn) {
  case Fn::Sum:
    how = ReduceFn::Sum;
    break;
  case Fn::Mean:
    how = ReduceFn::Mean;
    break;
  case Fn::Max:
    how = ReduceFn::Max;
    break;
  case Fn::Prod:
    how = ReduceFn::Prod;
    break;
  case Fn::ArgMax:
    how = last ? ReduceFn::ArgMaxLast : ReduceFn::ArgMax;
    break;
  case Fn::ArgMin:
    how = last ? ReduceFn::ArgMinLast : ReduceFn::ArgMin;
    break;
  default:
    break;
  }
  r.data = ops().reduce(how, x, reduced);
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
  for (std::size_t d = 0; d < rank; ++d) {
    out[d] = x.type.shape[static_cast<std::size_t>(perm[d])];
  }
  BodyValue r = BodyValue::block(BlockType{out, x.type.dtype});
  if (numeric()) {
    r.data = ops().transpose(x, perm);
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
    if (shape[d] == 0) { // as in ONNX's Reshape: the input's dim at this position
      if (d >= x.type.shape.size()) {
        throw ExprError(args[1]->column, "reshape(): shape " + shapeText(shape) + " has a 0 at " +
                                             std::to_string(d) + " (keep that dim) but the block " +
                                             toString(x.type) + " has no dim " + std::to_string(d));
      }
      shape[d] = x.type.shape[d];
    }
  }
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
    r.data = ops().cast(x, d.dtype);
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
  r.data = ops().concat(list.blocks, axis, out);
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
    r.data = ops().slice(x, axis, start, stop);
  }
  return r;
}

} // namespace tapestry::expr::body_impl
