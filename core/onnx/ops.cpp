// ONNX operators as standard-library operations (docs/reference/onnx.md has
// the table). One handler per operator; a handler reads attributes and
// constant operands and emits one or more operations.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/diag/error.hpp"
#include "core/onnx/internal.hpp"
#include "core/onnx/ops_util.hpp"

namespace tapestry::onnx_import::detail {

using Handler = void (*)(Emitter&, const NodeProto&);

namespace {

const std::map<std::string, std::string>& unaryKernels() {
  static const std::map<std::string, std::string> table = {
      {"Relu", "relu"}, {"Tanh", "tanh"}, {"Exp", "exp"},   {"Sigmoid", "sigmoid"},
      {"Neg", "neg"},   {"Erf", "erf"},   {"Sqrt", "sqrt"}, {"Reciprocal", "reciprocal"},
      {"Log", "log"},   {"Abs", "abs"}};
  return table;
}

void unary(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), unaryKernels().at(node.op_type()), Json::object(),
         Json{{"input", e.use(node.input(0))}}, result(node));
}

// Dropout in inference is the identity. Its training_mode input (opset 12 on)
// turns random dropping on: a model that sets it, or leaves it to a graph
// input, is refused rather than run as inference, unless its ratio is a
// constant 0 (torchvision's Swin calls F.dropout(p=0.0) in training mode:
// nothing is dropped either way).
void checkDropoutInference(Emitter& e, const NodeProto& node) {
  if (outputUsed(node, 1)) {
    e.fail(node, "its mask output is used; tapestry imports inference graphs");
  }
  if (node.input_size() < 3 || node.input(2).empty()) {
    return;
  }
  if (scalarOf(e, node.input(1)) == 0.0) {
    return;
  }
  const Constant* mode = e.constant(node.input(2));
  if (mode == nullptr || !mode->present || !isFoldable(mode->type) || mode->count() != 1) {
    e.fail(node, "its training_mode input " + node.input(2) +
                     " is not a constant; tapestry imports inference graphs (training_mode "
                     "must be absent or a constant false)");
  }
  if (mode->values()[0] != 0) {
    e.fail(node, "its training_mode is true (random dropping); tapestry imports inference "
                 "graphs (training_mode must be absent or a constant false)");
  }
}

void alias(Emitter& e, const NodeProto& node) {
  if (node.op_type() == "Dropout") {
    checkDropoutInference(e, node);
  }
  e.alias(node.output(0), node.input(0));
}

// Add, Sub, Mul, Div, Pow: a one-element constant operand becomes a scalar
// form (x + c -> add_scalar, c - x -> rsub_scalar, x / c -> div_scalar, ...);
// x / c stays a division, which is exact where mul_scalar(1/c) would round.
void binary(Emitter& e, const NodeProto& node) {
  const std::string& op = node.op_type();
  // A one-element operand of higher rank than the other would add dims to the
  // result ([4] + [[c]] is [1, 4]): it stays a tensor.
  // The scalar forms take floats only: integer operands stay a tensor op.
  auto scalarOperand = [&](int i) -> std::optional<double> {
    const std::optional<double> v = scalarOf(e, node.input(i));
    const std::optional<Shape> other = e.knownShape(node.input(1 - i));
    const bool floating = isFloatDtype(dtypeName(e.typeOf(node.input(1 - i))));
    if (!v || !other || !floating || e.constant(node.input(i))->shape.size() > other->size()) {
      return std::nullopt;
    }
    return v;
  };
  const std::optional<double> a = scalarOperand(0);
  const std::optional<double> b = scalarOperand(1);
  const std::string name = e.opName(node, "");
  auto scalar = [&](const char* kernel, int operand, double value) {
    e.emit(name, kernel, Json{{"value", value}}, Json{{"input", e.use(node.input(operand))}},
           result(node));
  };
  if (b && !a) {
    if (op == "Add")
      return scalar("add_scalar", 0, *b);
    if (op == "Sub")
      return scalar("add_scalar", 0, -*b);
    if (op == "Mul")
      return scalar("mul_scalar", 0, *b);
    if (op == "Div")
      return scalar("div_scalar", 0, *b);
    if (op == "Pow")
      return scalar("pow_scalar", 0, *b);
  }
  if (a && !b) {
    if (op == "Add")
      return scalar("add_scalar", 1, *a);
    if (op == "Mul")
      return scalar("mul_scalar", 1, *a);
    if (op == "Sub")
      return scalar("rsub_scalar", 1, *a);
    if (op == "Div")
      return scalar("rdiv_scalar", 1, *a);
  }
  std::string kernel = op;
  std::transform(kernel.begin(), kernel.end(), kernel.begin(),
                 [](char c) { return static_cast<char>(std::tolower(c)); });
  e.emit(name, kernel, Json::object(),
         Json{{"A", e.use(node.input(0))}, {"B", e.use(node.input(1))}}, result(node));
}

void matmul(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), "matmul", Json::object(),
         Json{{"X", e.use(node.input(0))}, {"W", e.use(node.input(1))}}, result(node));
}

// C as linear's bias [N], when it is one: C itself when it is [N]; a new
// constant [N] when C is a constant that broadcasts along the rows (a [1, N]
// one reshaped, a one-element one repeated). Otherwise nullopt: C is added.
std::optional<std::string> gemmBias(Emitter& e, const NodeProto& node, std::int64_t n) {
  const std::string& name = node.input(2);
  const Shape shape = e.shapeOf(node, name);
  if (shape == Shape{n}) {
    return e.use(name);
  }
  const Constant* c = e.constant(name);
  if (c == nullptr || shape.size() > 2) {
    return std::nullopt;
  }
  if (!shape.empty() && shape.back() == n && c->count() == n) { // [1, N]
    Constant bias = *c;
    bias.shape = {n};
    return e.addConstant(e.resolve(name) + "/bias", std::move(bias));
  }
  if (c->count() == 1 && c->present && isFoldable(c->type)) { // [1], [1, 1]
    const std::vector<double> values(static_cast<std::size_t>(n), c->values()[0]);
    return e.addConstant(e.resolve(name) + "/bias", makeConstant(c->type, {n}, values));
  }
  return std::nullopt;
}

// A [M,K] (stored [K,M] with transA), B [K,N] ([N,K] with transB), optional
// C: the transposes are the product kernel's transpose_x / transpose_w, read
// in place (no transpose operation). With alpha = beta = 1 and a C that is a
// bias (gemmBias) it is one linear; otherwise a matmul, then the scalings
// and the add of C (which broadcasts as ONNX's does).
void gemm(Emitter& e, const NodeProto& node) {
  const bool transA = intAttribute(node, "transA", 0) != 0;
  const bool transB = intAttribute(node, "transB", 0) != 0;
  Json params = Json::object();
  if (transA) {
    params["transpose_x"] = true;
  }
  if (transB) {
    params["transpose_w"] = true;
  }
  const std::string a = e.use(node.input(0));
  const std::string b = e.use(node.input(1));
  const double alpha = floatAttribute(node, "alpha", 1.0f);
  const double beta = floatAttribute(node, "beta", 1.0f);
  const bool hasC = hasInput(node, 2);
  if (hasC && alpha == 1.0 && beta == 1.0) {
    const Shape bShape = e.shapeOf(node, node.input(1));
    if (bShape.size() == 2) {
      if (const std::optional<std::string> bias = gemmBias(e, node, bShape[transB ? 0 : 1])) {
        e.emit(e.opName(node, ""), "linear", params, Json{{"X", a}, {"W", b}, {"bias", *bias}},
               result(node));
        return;
      }
    }
  }
  std::string product = hasC || alpha != 1.0 ? e.tempName(node, "AB") : node.output(0);
  e.emit(e.opName(node, ""), "matmul", params, Json{{"X", a}, {"W", b}}, Json{{"result", product}});
  if (alpha != 1.0) {
    const std::string scaled = hasC ? e.tempName(node, "alpha_AB") : node.output(0);
    e.emit(e.opName(node, "alpha"), "mul_scalar", Json{{"value", alpha}}, Json{{"input", product}},
           Json{{"result", scaled}});
    product = scaled;
  }
  if (hasC) {
    std::string c = e.use(node.input(2));
    if (beta != 1.0) {
      const std::string scaled = e.tempName(node, "beta_C");
      e.emit(e.opName(node, "beta"), "mul_scalar", Json{{"value", beta}}, Json{{"input", c}},
             Json{{"result", scaled}});
      c = scaled;
    }
    e.emit(e.opName(node, "add_C"), "add", Json::object(), Json{{"A", product}, {"B", c}},
           result(node));
  }
}

void batchnorm(Emitter& e, const NodeProto& node) {
  if (intAttribute(node, "training_mode", 0) != 0) {
    e.fail(node, "training_mode 1; tapestry imports inference graphs");
  }
  e.emit(e.opName(node, ""), "batchnorm", Json{{"epsilon", floatAttribute(node, "epsilon", 1e-5f)}},
         Json{{"input", e.use(node.input(0))},
              {"scale", e.use(node.input(1))},
              {"bias", e.use(node.input(2))},
              {"mean", e.use(node.input(3))},
              {"var", e.use(node.input(4))}},
         result(node));
}

void softmax(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), "softmax", Json{{"axis", intAttribute(node, "axis", -1)}},
         Json{{"input", e.use(node.input(0))}}, result(node));
}

// LayerNormalization normalizes the dims from `axis` on. The standard
// layernorm normalizes the last dim, so for another axis the input is read as
// [rows, cols] (the dims before axis, and from it) and the result reshaped
// back; Scale and B are read as [cols]. The Mean and InvStdDev outputs
// (shape[:axis] and then ones) are computed beside it from the same rows:
// mean, then 1 / sqrt(mean((x - mean)^2) + epsilon).
void layernorm(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const std::int64_t rank = static_cast<std::int64_t>(in.size());
  if (rank == 0) {
    e.fail(node, "its input is a scalar, with no dim to normalize");
  }
  const std::int64_t axis =
      normalizeAxis(intAttribute(node, "axis", -1), rank, "node " + node.name());
  std::int64_t rows = 1;
  std::int64_t cols = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    (d < axis ? rows : cols) *= in[static_cast<std::size_t>(d)];
  }
  const bool flat = axis != rank - 1;
  const float eps = floatAttribute(node, "epsilon", 1e-5f);
  auto reshapeTo = [&](const std::string& input, const Shape& shape, const std::string& out,
                       const std::string& what) {
    e.emit(e.opName(node, what), "reshape", Json{{"shape", intsJson(shape)}},
           Json{{"input", input}}, Json{{"result", out}});
    return out;
  };
  std::string x = e.use(node.input(0));
  if (flat) {
    x = reshapeTo(x, {rows, cols}, e.tempName(node, "rows"), "rows");
  }
  // Scale and B: [cols] as they are, else reshaped to it when they hold the
  // normalized dims' elements (a scale broadcast over them is refused).
  auto perColumn = [&](int i, const char* what) {
    const Shape shape = e.shapeOf(node, node.input(i));
    std::int64_t count = 1;
    for (std::int64_t d : shape) {
      count *= d;
    }
    if (count != cols) {
      e.fail(node, std::string("its ") + what + " input has " + std::to_string(count) +
                       " elements, not one per normalized element (" + std::to_string(cols) +
                       "); a broadcast " + what + " is not supported");
    }
    const std::string t = e.use(node.input(i));
    return shape == Shape{cols} ? t : reshapeTo(t, {cols}, e.tempName(node, what), what);
  };
  const std::string gamma = perColumn(1, "scale");
  std::string beta;
  if (hasInput(node, 2)) {
    beta = perColumn(2, "bias");
  } else {
    const int type = e.typeOf(node.input(0));
    beta = e.addConstant(node.name() + "/beta",
                         makeConstant(isFoldable(type) ? type : ::onnx::TensorProto::FLOAT, {cols},
                                      std::vector<double>(static_cast<std::size_t>(cols), 0.0)));
  }
  const std::string y = flat ? e.tempName(node, "normalized") : node.output(0);
  e.emit(e.opName(node, ""), "layernorm", Json{{"eps", eps}},
         Json{{"input", x}, {"gamma", gamma}, {"beta", beta}}, Json{{"result", y}});
  if (flat) {
    reshapeTo(y, in, node.output(0), "shape");
  }
  if (!outputUsed(node, 1) && !outputUsed(node, 2)) {
    return;
  }
  const std::int64_t last = flat ? 1 : rank - 1;
  auto step = [&](const std::string& what, const std::string& kernel, Json params, Json inputs) {
    const std::string out = e.tempName(node, what);
    e.emit(e.opName(node, what), kernel, std::move(params), std::move(inputs),
           Json{{"result", out}});
    return out;
  };
  const Json keep{{"axis", last}, {"keepdims", true}};
  const std::string mean = step("mean", "mean", keep, Json{{"input", x}});
  if (outputUsed(node, 1)) {
    reshapeTo(mean, e.shapeOf(node, node.output(1)), node.output(1), "mean_shape");
  }
  if (outputUsed(node, 2)) {
    const std::string diff = step("centered", "sub", Json::object(), Json{{"A", x}, {"B", mean}});
    const std::string square =
        step("squared", "mul", Json::object(), Json{{"A", diff}, {"B", diff}});
    const std::string var = step("variance", "mean", keep, Json{{"input", square}});
    const std::string shifted =
        step("variance_eps", "add_scalar", Json{{"value", eps}}, Json{{"input", var}});
    const std::string sd = step("stddev", "sqrt", Json::object(), Json{{"input", shifted}});
    const std::string inv = step("inv_stddev", "reciprocal", Json::object(), Json{{"input", sd}});
    reshapeTo(inv, e.shapeOf(node, node.output(2)), node.output(2), "inv_stddev_shape");
  }
}

void transpose(Emitter& e, const NodeProto& node) {
  Shape perm = intsAttribute(node, "perm");
  if (perm.empty()) {
    const std::int64_t rank = static_cast<std::int64_t>(e.shapeOf(node, node.input(0)).size());
    for (std::int64_t a = rank - 1; a >= 0; --a)
      perm.push_back(a);
  }
  e.emit(e.opName(node, ""), "transpose", Json{{"perm", intsJson(perm)}},
         Json{{"input", e.use(node.input(0))}}, result(node));
}

// Reshape, Flatten, Squeeze, Unsqueeze: a reshape to the inferred output shape.
void reshape(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), "reshape", Json{{"shape", intsJson(e.shapeOf(node, node.output(0)))}},
         Json{{"input", e.use(node.input(0))}}, result(node));
}

void concat(Emitter& e, const NodeProto& node) {
  Json tensors = Json::array();
  for (const std::string& name : node.input()) {
    tensors.push_back(e.use(name));
  }
  e.emit(e.opName(node, ""), "concat", Json{{"axis", intAttribute(node, "axis", 0)}},
         Json{{"tensors", tensors}}, result(node));
}

void split(Emitter& e, const NodeProto& node) {
  const std::int64_t rank = static_cast<std::int64_t>(e.shapeOf(node, node.input(0)).size());
  const std::int64_t axis =
      normalizeAxis(intAttribute(node, "axis", 0), rank, "node " + node.name());
  Shape sections;
  Json results = Json::array();
  for (const std::string& out : node.output()) {
    const Shape shape = e.shapeOf(node, out);
    if (shape.size() != static_cast<std::size_t>(rank)) {
      e.fail(node, "output " + out + " does not have the rank of the input");
    }
    sections.push_back(shape[static_cast<std::size_t>(axis)]);
    results.push_back(out);
  }
  e.emit(e.opName(node, ""), "split", Json{{"axis", axis}, {"sections", intsJson(sections)}},
         Json{{"input", e.use(node.input(0))}}, Json{{"results", results}});
}

// Pow's exponent may have another dtype than its base, and the result has the
// base's. The standard pow takes one floating dtype, so an integer base or an
// exponent of another dtype is computed in float64 (exact for the integer
// powers that fit) and cast to the base's dtype, truncating as ONNX does.
void power(Emitter& e, const NodeProto& node) {
  const std::string base = dtypeName(e.typeOf(node.input(0)));
  const std::string exponent = dtypeName(e.typeOf(node.input(1)));
  const bool floating = isFloatDtype(base);
  if (floating && (base == exponent || scalarOf(e, node.input(1)))) {
    return binary(e, node);
  }
  auto toDouble = [&](int i, const std::string& dtype, const char* what) {
    const std::string in = e.use(node.input(i));
    if (dtype == "float64") {
      return in;
    }
    const std::string out = e.tempName(node, what);
    e.emit(e.opName(node, what), "cast", Json{{"dtype", "float64"}}, Json{{"input", in}},
           Json{{"result", out}});
    return out;
  };
  const std::string x = toDouble(0, base, "base_f64");
  const std::string y = toDouble(1, exponent, "exponent_f64");
  const bool back = base != "float64";
  const std::string p = back ? e.tempName(node, "power_f64") : node.output(0);
  e.emit(e.opName(node, back ? "power" : ""), "pow", Json::object(), Json{{"A", x}, {"B", y}},
         Json{{"result", p}});
  if (back) {
    e.emit(e.opName(node, ""), "cast", Json{{"dtype", base}}, Json{{"input", p}}, result(node));
  }
}

void cast(Emitter& e, const NodeProto& node) {
  const std::string dtype = dtypeName(static_cast<int>(intAttribute(node, "to", 0)));
  if (dtype.empty()) {
    e.fail(node, "it casts to an element type tapestry has no dtype for");
  }
  e.emit(e.opName(node, ""), "cast", Json{{"dtype", dtype}}, Json{{"input", e.use(node.input(0))}},
         result(node));
}

// Gather of rows of a constant 2-D table is an embedding lookup; any other a gather.
void gather(Emitter& e, const NodeProto& node) {
  const Constant* table = e.constant(node.input(0));
  const std::int64_t axis = intAttribute(node, "axis", 0);
  if (table != nullptr && table->shape.size() == 2 && axis == 0) {
    e.emit(e.opName(node, ""), "embedding", Json::object(),
           Json{{"table", e.use(node.input(0))}, {"indices", e.use(node.input(1))}}, result(node));
    return;
  }
  e.emit(e.opName(node, ""), "gather", Json{{"axis", axis}},
         Json{{"data", e.use(node.input(0))}, {"indices", e.use(node.input(1))}}, result(node));
}

void where(Emitter& e, const NodeProto& node) {
  e.emit(e.opName(node, ""), "where", Json::object(),
         Json{{"condition", e.use(node.input(0))},
              {"X", e.use(node.input(1))},
              {"Y", e.use(node.input(2))}},
         result(node));
}

// One dim of a Slice with a step above 1: every step-th element of
// [start, end). Made of copies that tapestry's kernels have: a window of m *
// step elements from w0 (zeros appended where the dim is shorter), reshaped to
// [m, step] along the dim, column start - w0 of it, reshaped back.
struct StridedDim {
  std::size_t axis = 0;
  std::int64_t start = 0, end = 0, step = 1;
};

void strided(Emitter& e, const NodeProto& node, std::string x, Shape shape,
             const std::vector<StridedDim>& dims) {
  const int type = e.typeOf(node.input(0));
  if (!isFoldable(type)) {
    e.fail(node, "a step above 1 on a tensor whose element type has no constant tapestry can make");
  }
  auto step = [&](const std::string& tag, const std::string& kernel, Json params, Json inputs,
                  bool last) {
    const std::string out = last ? node.output(0) : e.tempName(node, tag);
    e.emit(e.opName(node, last ? "" : tag), kernel, std::move(params), std::move(inputs),
           Json{{"result", out}});
    return out;
  };
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const StridedDim& sd = dims[k];
    const std::size_t a = sd.axis;
    const std::string tag = "axis" + std::to_string(a);
    const std::int64_t n = shape[a];
    const std::int64_t m = 1 + (sd.end - sd.start - 1) / sd.step;
    const std::int64_t w0 = m * sd.step <= n ? std::min(sd.start, n - m * sd.step) : 0;
    const std::int64_t have = std::min(n, w0 + m * sd.step) - w0;
    if (w0 > 0 || have < n) {
      Shape from(shape.size(), 0);
      Shape to = shape;
      from[a] = w0;
      to[a] = w0 + have;
      x = step(tag + "_window", "slice", Json{{"starts", intsJson(from)}, {"ends", intsJson(to)}},
               Json{{"input", x}}, false);
    }
    Shape window = shape;
    window[a] = have;
    if (have < m * sd.step) {
      const std::string zeros = constantBlock(e, node.name() + "/" + tag + "_zeros", type, window,
                                              a, m * sd.step - have, 0.0);
      x = step(tag + "_filled", "concat", Json{{"axis", static_cast<std::int64_t>(a)}},
               Json{{"tensors", Json::array({x, zeros})}}, false);
    }
    Shape columns(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(a));
    columns.push_back(m);
    columns.push_back(sd.step);
    columns.insert(columns.end(), shape.begin() + static_cast<std::ptrdiff_t>(a) + 1, shape.end());
    x = step(tag + "_steps", "reshape", Json{{"shape", intsJson(columns)}}, Json{{"input", x}},
             false);
    Shape from(columns.size(), 0);
    Shape to = columns;
    from[a + 1] = sd.start - w0;
    to[a + 1] = sd.start - w0 + 1;
    x = step(tag + "_picked", "slice", Json{{"starts", intsJson(from)}, {"ends", intsJson(to)}},
             Json{{"input", x}}, false);
    shape[a] = m;
    x = step(tag + "_strided", "reshape", Json{{"shape", intsJson(shape)}}, Json{{"input", x}},
             k + 1 == dims.size());
  }
}

// Slice: a slice of the dims of step 1, then each dim of a larger step by
// strided(); a negative step (reversal) is refused.
void slice(Emitter& e, const NodeProto& node) {
  const Shape in = e.shapeOf(node, node.input(0));
  const std::int64_t rank = static_cast<std::int64_t>(in.size());
  const Shape starts = constantInts(e, node, 1, "starts");
  const Shape ends = constantInts(e, node, 2, "ends");
  Shape axes;
  if (hasInput(node, 3)) {
    axes = constantInts(e, node, 3, "axes");
  } else {
    for (std::size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<std::int64_t>(i));
  }
  Shape steps(starts.size(), 1);
  if (hasInput(node, 4)) {
    steps = constantInts(e, node, 4, "steps");
  }
  Shape begin(in.size(), 0);
  Shape end = in;
  std::vector<StridedDim> stepped;
  for (std::size_t i = 0; i < starts.size() && i < ends.size() && i < axes.size(); ++i) {
    if (steps.at(i) < 1) {
      e.fail(node,
             "step " + std::to_string(steps[i]) + "; tapestry's slice takes positive steps only");
    }
    const std::size_t a =
        static_cast<std::size_t>(normalizeAxis(axes[i], rank, "node " + node.name()));
    auto clampIndex = [&](std::int64_t v) {
      return std::clamp<std::int64_t>(v < 0 ? v + in[a] : v, 0, in[a]);
    };
    const std::int64_t from = clampIndex(starts[i]);
    const std::int64_t to = std::max(from, clampIndex(ends[i]));
    // One element (or none) taken: a plain slice. Else step < to - from <=
    // the dim, so m * step stays below twice the dim.
    if (steps[i] == 1 || to - from <= steps[i]) {
      begin[a] = from;
      end[a] = steps[i] == 1 ? to : std::min(to, from + 1);
    } else {
      stepped.push_back(StridedDim{a, from, to, steps[i]});
    }
  }
  if (stepped.empty()) {
    e.emit(e.opName(node, ""), "slice", Json{{"starts", intsJson(begin)}, {"ends", intsJson(end)}},
           Json{{"input", e.use(node.input(0))}}, result(node));
    return;
  }
  std::string x = e.use(node.input(0));
  if (begin != Shape(in.size(), 0) || end != in) {
    const std::string cut = e.tempName(node, "cut");
    e.emit(e.opName(node, "cut"), "slice",
           Json{{"starts", intsJson(begin)}, {"ends", intsJson(end)}}, Json{{"input", x}},
           Json{{"result", cut}});
    x = cut;
  }
  Shape shape = in;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    shape[d] = end[d] - begin[d];
  }
  strided(e, node, x, shape, stepped);
}

void clip(Emitter& e, const NodeProto& node) {
  const bool floats = isFloatDtype(dtypeName(e.typeOf(node.input(0))));
  for (int i : {1, 2}) {
    if (!floats || (hasInput(node, i) && !scalarOf(e, node.input(i)))) {
      return clipByTensors(e, node);
    }
  }
  double lo = -static_cast<double>(std::numeric_limits<float>::max());
  double hi = static_cast<double>(std::numeric_limits<float>::max());
  for (int i : {1, 2}) {
    if (hasInput(node, i)) {
      const std::optional<double> v = scalarOf(e, node.input(i));
      if (!v) {
        e.fail(node, "its " + std::string(i == 1 ? "min" : "max") + " input " + node.input(i) +
                         " is not a one-element constant");
      }
      (i == 1 ? lo : hi) = *v;
    }
  }
  e.emit(e.opName(node, ""), "clip", Json{{"min", lo}, {"max", hi}},
         Json{{"input", e.use(node.input(0))}}, result(node));
}

// Sum of n inputs: a chain of n - 1 adds (NumPy broadcasting); one input is an alias.
// Sum is a chain of adds; Mean the same, then times 1/n (mul_scalar).
void sum(Emitter& e, const NodeProto& node) {
  const bool mean = node.op_type() == "Mean";
  std::string acc = e.use(node.input(0));
  if (node.input_size() == 1) {
    e.alias(node.output(0), node.input(0));
    return;
  }
  for (int i = 1; i < node.input_size(); ++i) {
    const bool last = i + 1 == node.input_size() && !mean;
    const std::string out = last ? node.output(0) : e.tempName(node, "sum" + std::to_string(i));
    e.emit(e.opName(node, last ? "" : "add" + std::to_string(i)), "add", Json::object(),
           Json{{"A", acc}, {"B", e.use(node.input(i))}}, Json{{"result", out}});
    acc = out;
  }
  if (mean) {
    e.emit(e.opName(node, ""), "mul_scalar", Json{{"value", 1.0 / node.input_size()}},
           Json{{"input", acc}}, result(node));
  }
}

// HardSigmoid(x) = max(0, min(1, alpha*x + beta)) and HardSwish(x) = x *
// HardSigmoid(x) with alpha 1/6, beta 1/2: one pass each.
void hard(Emitter& e, const NodeProto& node) {
  if (node.op_type() == "HardSwish") {
    e.emit(e.opName(node, ""), "hard_swish", Json::object(), Json{{"input", e.use(node.input(0))}},
           result(node));
    return;
  }
  e.emit(e.opName(node, ""), "hard_sigmoid",
         Json{{"alpha", floatAttribute(node, "alpha", 0.2f)},
              {"beta", floatAttribute(node, "beta", 0.5f)}},
         Json{{"input", e.use(node.input(0))}}, result(node));
}

// ---------------------------------------------------------------- elementwise operators (issue 34)
// Max/Min (n-ary), comparisons and logic, Mod, PRelu, the parameterised
// activations, the unary math of elementwise.yaml, IsInf, and Clip whose bounds
// are tensors. Kernel names are snake_case: elementwise Max is `maximum`, so
// it does not collide with the reduction `max`.

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> table = [] {
    std::map<std::string, Handler> t = {{"Add", binary},
                                        {"Sub", binary},
                                        {"Mul", binary},
                                        {"Div", binary},
                                        {"Pow", power},
                                        {"MatMul", matmul},
                                        {"Gemm", gemm},
                                        {"Conv", conv},
                                        {"ConvTranspose", convTranspose},
                                        {"MaxPool", pool},
                                        {"AveragePool", pool},
                                        {"GlobalAveragePool", globalAvgPool},
                                        {"BatchNormalization", batchnorm},
                                        {"Softmax", softmax},
                                        {"LayerNormalization", layernorm},
                                        {"ReduceMean", reduce},
                                        {"ReduceSum", reduce},
                                        {"ReduceMax", reduce},
                                        {"ReduceMin", reduce},
                                        {"ReduceProd", reduce},
                                        {"ReduceL1", reduce},
                                        {"ReduceL2", reduce},
                                        {"ReduceSumSquare", reduce},
                                        {"ReduceLogSum", reduce},
                                        {"ReduceLogSumExp", reduce},
                                        {"ArgMax", argReduce},
                                        {"ArgMin", argReduce},
                                        {"Trilu", trilu},
                                        {"CumSum", cumsum},
                                        {"DepthToSpace", depthSpace},
                                        {"SpaceToDepth", depthSpace},
                                        {"Tile", tile},
                                        {"Hardmax", hardmax},
                                        {"Expand", expand},
                                        {"Pad", pad},
                                        {"Resize", resize},
                                        {"Transpose", transpose},
                                        {"Reshape", reshape},
                                        {"Flatten", reshape},
                                        {"Squeeze", reshape},
                                        {"Unsqueeze", reshape},
                                        {"Concat", concat},
                                        {"Split", split},
                                        {"Cast", cast},
                                        {"Gather", gather},
                                        {"Where", where},
                                        {"GatherElements", gatherElements},
                                        {"Slice", slice},
                                        {"Clip", clip},
                                        {"Sum", sum},
                                        {"Mean", sum},
                                        {"HardSigmoid", hard},
                                        {"HardSwish", hard},
                                        {"Identity", alias},
                                        {"Dropout", alias},
                                        // elementwise operators (issue 34)
                                        {"Max", extremum},
                                        {"Min", extremum},
                                        {"Mod", mod},
                                        {"PRelu", prelu},
                                        {"LeakyRelu", activation},
                                        {"Elu", activation},
                                        {"Selu", activation},
                                        {"Celu", activation},
                                        {"ThresholdedRelu", activation},
                                        {"IsInf", isinf}};
    for (const auto& [op, kernel] : binaryKernels()) {
      t[op] = binaryKernel;
    }
    for (const auto& [op, kernel] : mathKernels()) {
      t[op] = mathKernel;
    }
    for (const auto& [op, kernel] : unaryKernels()) {
      t[op] = unary;
    }
    return t;
  }();
  return table;
}

} // namespace

std::vector<std::string> mappedOperators() {
  std::vector<std::string> ops;
  for (const auto& [op, handler] : handlers()) {
    ops.push_back(op);
  }
  return ops;
}

void mapNode(Emitter& e, const NodeProto& node) {
  const bool onnxDomain = defaultDomain(node.domain());
  auto it = handlers().find(node.op_type());
  if (!onnxDomain || it == handlers().end()) {
    std::string list;
    for (const std::string& op : mappedOperators()) {
      list += (list.empty() ? "" : ", ") + op;
    }
    const std::string op = onnxDomain ? node.op_type() : node.domain() + "." + node.op_type();
    throw Error(SourceLocation{e.file(), 0, 0, {}}, "unsupported ONNX operator " + op + " (node " +
                                                        node.name() +
                                                        "); tapestry imports: " + list);
  }
  it->second(e, node);
}

} // namespace tapestry::onnx_import::detail
