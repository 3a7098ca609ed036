// ONNX reductions, indexing and shape operators as standard-library
// operations (docs/reference/onnx.md has the table): ReduceMin/Prod/L1/L2/...,
// ArgMax/ArgMin, Trilu, CumSum, DepthToSpace/SpaceToDepth, Tile, Hardmax,
// Expand, Pad and GatherElements. ops.cpp's table maps the operators here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/onnx/ops_util.hpp"

namespace tapestry::onnx_import::detail {

// ReduceMean/Sum/Max/Min/Prod over several axes: a chain of single-axis
// reductions, the highest axis first so that the lower axes keep their
// numbers. ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and
// ReduceLogSumExp are that chain of sums between elementwise steps: abs or
// x * x or exp before, sqrt or log after (ReduceLogSumExp as ONNX defines it,
// log(sum(exp(x))), without subtracting the maximum first).
void reduce(Emitter& e, const NodeProto& node) {
  const std::string& op = node.op_type();
  const std::int64_t rank = static_cast<std::int64_t>(e.shapeOf(node, node.input(0)).size());
  Shape axes = intsAttribute(node, "axes");
  if (hasInput(node, 1)) {
    axes = constantInts(e, node, 1, "axes");
  }
  if (axes.empty()) {
    if (intAttribute(node, "noop_with_empty_axes", 0) != 0) {
      e.alias(node.output(0), node.input(0));
      return;
    }
    for (std::int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  }
  for (std::int64_t& a : axes) {
    a = normalizeAxis(a, rank, "node " + node.name());
  }
  std::sort(axes.rbegin(), axes.rend());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const bool keepdims = intAttribute(node, "keepdims", 1) != 0;
  const std::map<std::string, std::string> kernels = {
      {"ReduceMean", "mean"}, {"ReduceMax", "max"}, {"ReduceMin", "min"}, {"ReduceProd", "prod"}};
  const auto known = kernels.find(op);
  const std::string kernel = known == kernels.end() ? "sum" : known->second;
  const char* before = op == "ReduceL1"                              ? "abs"
                       : op == "ReduceL2" || op == "ReduceSumSquare" ? "mul"
                       : op == "ReduceLogSumExp"                     ? "exp"
                                                                     : nullptr;
  const char* after = op == "ReduceL2"                                  ? "sqrt"
                      : op == "ReduceLogSum" || op == "ReduceLogSumExp" ? "log"
                                                                        : nullptr;
  std::string input = e.use(node.input(0));
  if (before != nullptr) {
    const std::string out = e.tempName(node, before);
    const Json inputs =
        std::string(before) == "mul" ? Json{{"A", input}, {"B", input}} : Json{{"input", input}};
    e.emit(e.opName(node, before), before, Json::object(), inputs, Json{{"result", out}});
    input = out;
  }
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const bool last = i + 1 == axes.size() && after == nullptr;
    const std::string step = "axis" + std::to_string(axes[i]);
    const std::string out = last ? node.output(0) : e.tempName(node, step);
    e.emit(e.opName(node, last ? "" : step), kernel,
           Json{{"axis", axes[i]}, {"keepdims", keepdims}}, Json{{"input", input}},
           Json{{"result", out}});
    input = out;
  }
  if (after != nullptr) {
    e.emit(e.opName(node, ""), after, Json::object(), Json{{"input", input}}, result(node));
  }
}

// ArgMax, ArgMin: one argmax/argmin operation (int64 indices).
void argReduce(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), node.op_type() == "ArgMax" ? "argmax" : "argmin",
         Json{{"axis", intAttribute(node, "axis", 0)},
              {"keepdims", intAttribute(node, "keepdims", 1) != 0},
              {"select_last_index", intAttribute(node, "select_last_index", 0) != 0}},
         Json{{"input", e.use(node.input(0))}}, result(node));
}

// Trilu: where(mask, x, 0) with the [M, N] mask of the kept triangle as a
// constant (upper: col - row >= k; lower: col - row <= k); k must be a constant.
void trilu(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  if (in.size() < 2) {
    e.fail(node, "its input has rank " + std::to_string(in.size()) + "; Trilu needs at least 2");
  }
  std::int64_t k = 0;
  if (hasInput(node, 1)) {
    const Shape ks = constantInts(e, node, 1, "k");
    if (ks.size() != 1) {
      e.fail(node, "its k input must hold one value");
    }
    k = ks[0];
  }
  const bool upper = intAttribute(node, "upper", 1) != 0;
  const std::int64_t rows = in[in.size() - 2];
  const std::int64_t cols = in.back();
  std::vector<double> mask;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) {
      mask.push_back((upper ? j - i >= k : j - i <= k) ? 1.0 : 0.0);
    }
  }
  const int type = e.typeOf(node.input(0));
  if (!isFoldable(type)) {
    e.fail(node, "its input's element type has no zero tapestry can make");
  }
  const std::string cond = e.addConstant(
      node.name() + "/mask", makeConstant(::onnx::TensorProto::BOOL, {rows, cols}, mask));
  const std::string zero = e.addConstant(node.name() + "/zero", makeConstant(type, {1}, {0.0}));
  e.emit(e.opName(node, ""), "where", Json::object(),
         Json{{"condition", cond}, {"X", e.use(node.input(0))}, {"Y", zero}}, result(node));
}

// CumSum along a constant axis: x (the axis moved last) @ T, T the constant
// [n, n] 0/1 matrix whose column j sums the elements up to j (exclusive: before
// j; reverse: from j, or after j, to the end), then the axis moved back (a
// 1-D input: reshaped to a row [1, n] and back).
void cumsum(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const std::int64_t rank = static_cast<std::int64_t>(in.size());
  const Shape axisValue = constantInts(e, node, 1, "axis");
  if (axisValue.size() != 1 || rank == 0) {
    e.fail(node, "its axis input must hold one value, and its input must have a dim");
  }
  const std::int64_t axis = normalizeAxis(axisValue[0], rank, "node " + node.name());
  const bool exclusive = intAttribute(node, "exclusive", 0) != 0;
  const bool reverse = intAttribute(node, "reverse", 0) != 0;
  const std::int64_t n = in[static_cast<std::size_t>(axis)];
  if (n > 4096) {
    e.fail(node, "its axis has " + std::to_string(n) +
                     " elements; tapestry's CumSum is a product with an [n, n] constant, for "
                     "axes of at most 4096");
  }
  std::vector<double> t;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      const bool summed = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
      t.push_back(summed ? 1.0 : 0.0);
    }
  }
  const int type = e.typeOf(node.input(0));
  if (!isFoldable(type)) {
    e.fail(node, "its input's element type has no ones tapestry can make");
  }
  const std::string tri = e.addConstant(node.name() + "/prefix", makeConstant(type, {n, n}, t));
  Shape perm; // the axis last, and back (the same permutation's inverse)
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d != axis)
      perm.push_back(d);
  }
  perm.push_back(axis);
  Shape back(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d) {
    back[static_cast<std::size_t>(perm[d])] = static_cast<std::int64_t>(d);
  }
  const bool moved = axis != rank - 1;
  std::string x = e.use(node.input(0));
  if (rank == 1) { // a row [1, n] for the product, and back
    const std::string row = e.tempName(node, "row");
    const std::string sums = e.tempName(node, "sums");
    e.emit(e.opName(node, "row"), "reshape", Json{{"shape", intsJson({1, n})}}, Json{{"input", x}},
           Json{{"result", row}});
    e.emit(e.opName(node, "sums"), "matmul", Json::object(), Json{{"X", row}, {"W", tri}},
           Json{{"result", sums}});
    e.emit(e.opName(node, ""), "reshape", Json{{"shape", intsJson({n})}}, Json{{"input", sums}},
           result(node));
    return;
  }
  if (moved) {
    const std::string t1 = e.tempName(node, "axis_last");
    e.emit(e.opName(node, "axis_last"), "transpose", Json{{"perm", intsJson(perm)}},
           Json{{"input", x}}, Json{{"result", t1}});
    x = t1;
  }
  const std::string sums = moved ? e.tempName(node, "sums") : node.output(0);
  e.emit(e.opName(node, moved ? "sums" : ""), "matmul", Json::object(), Json{{"X", x}, {"W", tri}},
         Json{{"result", sums}});
  if (moved) {
    e.emit(e.opName(node, ""), "transpose", Json{{"perm", intsJson(back)}}, Json{{"input", sums}},
           result(node));
  }
}

// DepthToSpace and SpaceToDepth as ONNX defines them: a reshape to 6 dims, a
// transpose, a reshape to the result.
void depthSpace(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const std::int64_t b = intAttribute(node, "blocksize", 0);
  if (in.size() != 4 || b < 1) {
    e.fail(node, "only [N, C, H, W] inputs and a positive blocksize are supported");
  }
  const std::int64_t n = in[0], c = in[1], h = in[2], w = in[3];
  Shape six, perm;
  if (node.op_type() == "DepthToSpace") {
    if (c % (b * b) != 0) {
      e.fail(node, "C is not a multiple of blocksize^2");
    }
    if (stringAttribute(node, "mode", "DCR") == "CRD") {
      six = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      six = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    }
  } else {
    if (h % b != 0 || w % b != 0) {
      e.fail(node, "H or W is not a multiple of blocksize");
    }
    six = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
  }
  const std::string split = e.tempName(node, "blocks");
  const std::string moved = e.tempName(node, "moved");
  e.emit(e.opName(node, "blocks"), "reshape", Json{{"shape", intsJson(six)}},
         Json{{"input", e.use(node.input(0))}}, Json{{"result", split}});
  e.emit(e.opName(node, "moved"), "transpose", Json{{"perm", intsJson(perm)}},
         Json{{"input", split}}, Json{{"result", moved}});
  e.emit(e.opName(node, ""), "reshape", Json{{"shape", intsJson(e.shapeOf(node, node.output(0)))}},
         Json{{"input", moved}}, result(node));
}

// Tile with constant repeats: per dim with a repeat above 1, a concat of that
// many copies along it.
void tile(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const Shape repeats = constantInts(e, node, 1, "repeats");
  if (repeats.size() != in.size()) {
    e.fail(node, "its repeats input must have one entry per dim of the input");
  }
  std::vector<std::size_t> dims;
  for (std::size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 1) {
      e.fail(node, "repeat " + std::to_string(repeats[d]) + " would make a zero-size tensor");
    }
    if (repeats[d] > 1)
      dims.push_back(d);
  }
  if (dims.empty()) {
    e.alias(node.output(0), node.input(0));
    return;
  }
  std::string x = e.use(node.input(0));
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const bool last = i + 1 == dims.size();
    const std::string step = "axis" + std::to_string(dims[i]);
    const std::string out = last ? node.output(0) : e.tempName(node, step);
    e.emit(e.opName(node, last ? "" : step), "concat",
           Json{{"axis", static_cast<std::int64_t>(dims[i])}},
           Json{{"tensors",
                 Json(std::vector<std::string>(static_cast<std::size_t>(repeats[dims[i]]), x))}},
           Json{{"result", out}});
    x = out;
  }
}

// Hardmax: 1 where the first maximum along the axis is, else 0, from an
// argmax: 1 - clip(|cast(argmax(x)) - iota|, 0, 1), iota the constant
// NODE/iota ([1..., n, 1...]: 0 to n - 1 along the axis). Every step is exact.
void hardmax(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const std::int64_t rank = static_cast<std::int64_t>(in.size());
  if (rank == 0) {
    e.fail(node, "its input is a scalar; Hardmax needs a dim");
  }
  const std::int64_t axis =
      normalizeAxis(intAttribute(node, "axis", -1), rank, "node " + node.name());
  const int type = e.typeOf(node.input(0));
  const std::string dtype = dtypeName(type);
  if (!isFoldable(type) ||
      (dtype != "float32" && dtype != "float64" && dtype != "float16" && dtype != "bfloat16")) {
    e.fail(node, "its input is not a float tensor");
  }
  const std::int64_t n = in[static_cast<std::size_t>(axis)];
  Shape iotaShape(in.size(), 1);
  iotaShape[static_cast<std::size_t>(axis)] = n;
  std::vector<double> iota;
  for (std::int64_t i = 0; i < n; ++i)
    iota.push_back(static_cast<double>(i));
  const std::string positions =
      e.addConstant(node.name() + "/iota", makeConstant(type, iotaShape, iota));
  const std::string at = e.tempName(node, "argmax");
  const std::string atCast = e.tempName(node, "argmax_cast");
  const std::string diff = e.tempName(node, "diff");
  const std::string dist = e.tempName(node, "distance");
  const std::string clipped = e.tempName(node, "clipped");
  e.emit(e.opName(node, "argmax"), "argmax", Json{{"axis", axis}, {"keepdims", true}},
         Json{{"input", e.use(node.input(0))}}, Json{{"result", at}});
  e.emit(e.opName(node, "cast"), "cast", Json{{"dtype", dtype}}, Json{{"input", at}},
         Json{{"result", atCast}});
  e.emit(e.opName(node, "sub"), "sub", Json::object(), Json{{"A", atCast}, {"B", positions}},
         Json{{"result", diff}});
  e.emit(e.opName(node, "abs"), "abs", Json::object(), Json{{"input", diff}},
         Json{{"result", dist}});
  e.emit(e.opName(node, "clip"), "clip", Json{{"min", 0.0}, {"max", 1.0}}, Json{{"input", dist}},
         Json{{"result", clipped}});
  e.emit(e.opName(node, ""), "rsub_scalar", Json{{"value", 1.0}}, Json{{"input", clipped}},
         result(node));
}

// Expand to a constant shape: where(true, x, x) with a constant true
// condition NODE/expand whose dims are the grown ones (1 elsewhere), so the
// three operands broadcast to the result and every value is x's, unchanged.
void expand(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const Shape out = e.shapeOf(node, node.output(0));
  (void)constantInts(e, node, 1, "shape");
  if (in == out) {
    e.alias(node.output(0), node.input(0));
    return;
  }
  Shape grown(out.size(), 1);
  for (std::size_t d = 0; d < out.size(); ++d) {
    const std::size_t lead = out.size() - in.size();
    const std::int64_t own = d < lead ? 1 : in[d - lead];
    grown[d] = own == out[d] ? 1 : out[d];
  }
  std::int64_t count = 1;
  for (std::int64_t g : grown)
    count *= g;
  const std::string cond =
      e.addConstant(node.name() + "/expand",
                    makeConstant(::onnx::TensorProto::BOOL, grown,
                                 std::vector<double>(static_cast<std::size_t>(count), 1.0)));
  const std::string x = e.use(node.input(0));
  e.emit(e.opName(node, ""), "where", Json::object(), Json{{"condition", cond}, {"X", x}, {"Y", x}},
         result(node));
}

// Pad: negative pads first as one slice; then per padded dim a concat of
// what goes before, the input and what goes after: a constant block of the
// value (mode constant), copies of the edge slice (edge), or the mirrored
// one-wide slices (reflect). pads and the value must be constants.
// Pad's mode, checked: constant, edge or reflect.
std::string padMode(Emitter& e, const NodeProto& node) {
  const std::string mode = stringAttribute(node, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") {
    e.fail(node, "mode " + mode + "; tapestry pads with constant, edge or reflect");
  }
  return mode;
}

// Pad's constant_value: a one-element finite constant, 0 when absent.
double padValue(Emitter& e, const NodeProto& node) {
  if (!hasInput(node, 2)) {
    return 0.0;
  }
  const std::optional<double> v = scalarOf(e, node.input(2));
  if (!v) {
    e.fail(node,
           "its constant_value input " + node.input(2) + " is not a one-element finite constant");
  }
  return *v;
}

void pad(Emitter& e, const NodeProto& node) {
  Shape shape = e.shapeOf(node, node.input(0));
  const std::size_t rank = shape.size();
  const Shape pads = constantInts(e, node, 1, "pads");
  if (pads.size() != 2 * rank) {
    e.fail(node, "its pads input must have 2 entries per dim of the input");
  }
  if (hasInput(node, 3)) {
    e.fail(node, "its axes input is not supported; pads must cover every dim");
  }
  const std::string mode = padMode(e, node);
  const double value = padValue(e, node);
  const int type = e.typeOf(node.input(0));
  if (!isFoldable(type)) {
    e.fail(node, "its input's element type has no constant tapestry can make");
  }
  std::string x = e.use(node.input(0));
  std::vector<std::size_t> padded;
  Shape starts(rank, 0);
  Shape ends = shape;
  bool cut = false;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t before = pads[d];
    const std::int64_t after = pads[d + rank];
    if (before < 0 || after < 0) {
      starts[d] = std::max<std::int64_t>(0, -before);
      ends[d] = shape[d] - std::max<std::int64_t>(0, -after);
      if (starts[d] >= ends[d]) {
        e.fail(node, "its negative pads remove every element of dim " + std::to_string(d));
      }
      cut = true;
    }
    if (before > 0 || after > 0) {
      padded.push_back(d);
    }
  }
  auto slice = [&](const std::string& input, const Shape& from, const Shape& to,
                   const std::string& tag) {
    const std::string out = e.tempName(node, tag);
    e.emit(e.opName(node, tag), "slice", Json{{"starts", intsJson(from)}, {"ends", intsJson(to)}},
           Json{{"input", input}}, Json{{"result", out}});
    return out;
  };
  if (!cut && padded.empty()) {
    // Pads of zero: the input itself (torchvision's DenseNet pads each
    // transition's average pool by nothing; a copy there would also keep
    // the CPU backend's images around it row-major).
    e.alias(node.output(0), node.input(0));
    return;
  }
  if (cut) {
    x = slice(x, starts, ends, "cut");
    for (std::size_t d = 0; d < rank; ++d)
      shape[d] = ends[d] - starts[d];
  }
  if (padded.empty()) {
    e.emit(e.opName(node, ""), "reshape", Json{{"shape", intsJson(shape)}}, Json{{"input", x}},
           result(node));
    return;
  }
  for (std::size_t i = 0; i < padded.size(); ++i) {
    const std::size_t d = padded[i];
    const std::int64_t before = std::max<std::int64_t>(0, pads[d]);
    const std::int64_t after = std::max<std::int64_t>(0, pads[d + rank]);
    const std::int64_t n = shape[d];
    if (mode == "reflect" && (before > n - 1 || after > n - 1)) {
      e.fail(node, "reflect pads of dim " + std::to_string(d) + " exceed its size - 1");
    }
    const std::string tag = "axis" + std::to_string(d);
    // the one-wide slice k of dim d of x
    auto at = [&](std::int64_t k) {
      Shape from(rank, 0);
      Shape to = shape;
      from[d] = k;
      to[d] = k + 1;
      return slice(x, from, to, tag + "_at" + std::to_string(k));
    };
    std::map<std::int64_t, std::string> slices;
    auto sliceAt = [&](std::int64_t k) {
      auto it = slices.find(k);
      return it != slices.end() ? it->second : (slices[k] = at(k));
    };
    auto block = [&](std::int64_t width, const char* side) {
      return constantBlock(e, node.name() + "/" + tag + "_" + side, type, shape, d, width, value);
    };
    Json tensors = Json::array();
    if (before > 0) {
      if (mode == "constant") {
        tensors.push_back(block(before, "before"));
      }
      for (std::int64_t j = 0; mode != "constant" && j < before; ++j) {
        tensors.push_back(sliceAt(mode == "edge" ? 0 : before - j));
      }
    }
    tensors.push_back(x);
    if (after > 0) {
      if (mode == "constant") {
        tensors.push_back(block(after, "after"));
      }
      for (std::int64_t j = 0; mode != "constant" && j < after; ++j) {
        tensors.push_back(sliceAt(mode == "edge" ? n - 1 : n - 2 - j));
      }
    }
    const bool last = i + 1 == padded.size();
    const std::string out = last ? node.output(0) : e.tempName(node, tag);
    e.emit(e.opName(node, last ? "" : tag), "concat", Json{{"axis", static_cast<std::int64_t>(d)}},
           Json{{"tensors", tensors}}, Json{{"result", out}});
    x = out;
    shape[d] += before + after;
  }
}

std::string constantBlock(Emitter& e, const std::string& name, int type, Shape shape,
                          std::size_t axis, std::int64_t width, double value) {
  shape[axis] = width;
  std::int64_t count = 1;
  for (std::int64_t v : shape) {
    count *= v;
  }
  return e.addConstant(
      name, makeConstant(type, shape, std::vector<double>(static_cast<std::size_t>(count), value)));
}

// GatherElements(data, indices, axis): out[i] = data[i with i[axis] replaced
// by indices[i]], out of indices' shape. As standard kernels: data cut to
// indices' shape off the axis (slice), the axis moved last (transpose) and a
// unit dim put in its place (reshape); the indices taken modulo the axis'
// length (mod: negative ones count from the end) and compared with a constant
// 0..K-1 along a new last dim (equal), which picks one element of data per
// output (where, zero elsewhere) that a sum over the new dim keeps. Exact (the
// sum adds zeros to one element), and splittable like any of those kernels.
void gatherElements(Emitter& e, const NodeProto& node) {
  const Shape data = e.shapeOf(node, node.input(0));
  const Shape idx = e.shapeOf(node, node.input(1));
  const std::int64_t rank = static_cast<std::int64_t>(data.size());
  if (rank == 0 || idx.size() != data.size()) {
    e.fail(node, "data and indices must have the same rank, at least 1");
  }
  const std::int64_t axis =
      normalizeAxis(intAttribute(node, "axis", 0), rank, "node " + node.name());
  const std::size_t a = static_cast<std::size_t>(axis);
  const std::int64_t k = data[a];
  const int dataType = e.typeOf(node.input(0));
  const int indexType = e.typeOf(node.input(1));
  if (!isFoldable(dataType)) {
    e.fail(node, "its data is " + dtypeName(dataType) +
                     "; tapestry gathers elements of float32, float64, int32 and int64 tensors");
  }
  auto step = [&](const std::string& what, const std::string& kernel, Json params, Json inputs,
                  const std::string& out) {
    e.emit(e.opName(node, what), kernel, std::move(params), std::move(inputs),
           Json{{"result", out}});
    return out;
  };
  std::string x = e.use(node.input(0));
  Shape ends = data;
  bool cut = false;
  for (std::size_t d = 0; d < data.size(); ++d) {
    if (d != a && idx[d] != data[d]) {
      if (idx[d] > data[d]) {
        e.fail(node, "indices' dim " + std::to_string(d) + " (" + std::to_string(idx[d]) +
                         ") is larger than data's (" + std::to_string(data[d]) + ")");
      }
      ends[d] = idx[d];
      cut = true;
    }
  }
  if (cut) {
    x = step("cut", "slice",
             Json{{"starts", intsJson(Shape(data.size(), 0))}, {"ends", intsJson(ends)}},
             Json{{"input", x}}, e.tempName(node, "cut"));
  }
  Shape perm;
  Shape rows; // indices' shape with a unit dim at the axis, then K
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d != axis) {
      perm.push_back(d);
    }
    rows.push_back(d == axis ? 1 : idx[static_cast<std::size_t>(d)]);
  }
  perm.push_back(axis);
  rows.push_back(k);
  if (axis != rank - 1) {
    x = step("moved", "transpose", Json{{"perm", intsJson(perm)}}, Json{{"input", x}},
             e.tempName(node, "moved"));
  }
  x = step("rows", "reshape", Json{{"shape", intsJson(rows)}}, Json{{"input", x}},
           e.tempName(node, "rows"));
  const std::string length = e.addConstant(node.name() + "/length",
                                           makeConstant(indexType, {1}, {static_cast<double>(k)}));
  const std::string wrapped =
      step("wrapped", "mod", Json::object(), Json{{"A", e.use(node.input(1))}, {"B", length}},
           e.tempName(node, "wrapped"));
  Shape column = idx;
  column.push_back(1);
  const std::string index = step("column", "reshape", Json{{"shape", intsJson(column)}},
                                 Json{{"input", wrapped}}, e.tempName(node, "column"));
  Shape iotaShape(static_cast<std::size_t>(rank), 1);
  iotaShape.push_back(k);
  std::vector<double> iota;
  for (std::int64_t i = 0; i < k; ++i) {
    iota.push_back(static_cast<double>(i));
  }
  const std::string positions =
      e.addConstant(node.name() + "/positions", makeConstant(indexType, iotaShape, iota));
  const std::string mask = step("mask", "equal", Json::object(),
                                Json{{"A", index}, {"B", positions}}, e.tempName(node, "mask"));
  const std::string zero = e.addConstant(node.name() + "/zero", makeConstant(dataType, {1}, {0.0}));
  const std::string picked =
      step("picked", "where", Json::object(), Json{{"condition", mask}, {"X", x}, {"Y", zero}},
           e.tempName(node, "picked"));
  e.emit(e.opName(node, ""), "sum", Json{{"axis", rank}, {"keepdims", false}},
         Json{{"input", picked}}, result(node));
}

} // namespace tapestry::onnx_import::detail
