// Folding at import: the outputs of a node whose inputs are all small
// constants, computed here in double precision (exact for the int64 shape
// arithmetic PyTorch exports, and for float32 values that pass through).
#include <algorithm>
#include <cmath>
#include <map>

#include "core/diag/error.hpp"
#include "core/onnx/internal.hpp"

namespace tapestry::onnx_import::detail {

using ::onnx::NodeProto;
using ::onnx::TensorProto;

namespace {

using Shape = std::vector<std::int64_t>;

std::int64_t product(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) {
    n *= d;
  }
  return n;
}

Shape stridesOf(const Shape& s) {
  Shape strides(s.size(), 1);
  for (std::size_t i = s.size(); i-- > 1;) {
    strides[i - 1] = strides[i] * s[i];
  }
  return strides;
}

std::string where(const NodeProto& node) {
  return "node " + node.name() + " (" + node.op_type() + ")";
}

// Whether a shape read from a constant is one to fold to: dims >= 0, at most
// kFoldLimit elements (and no overflow on the way).
bool foldableShape(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) {
    if (d < 0 || d > kFoldLimit) {
      return false;
    }
    n *= d;
    if (n > kFoldLimit) {
      return false;
    }
  }
  return true;
}

Shape broadcastShapes(const NodeProto& node, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      throw Error(where(node) + ": cannot broadcast shapes");
    }
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

// The element of `v` (shape `s`) that output index `flat` of `out` reads under broadcasting.
double broadcastAt(const std::vector<double>& v, const Shape& s, const Shape& out,
                   std::int64_t flat) {
  std::int64_t offset = 0;
  std::int64_t stride = 1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t o = out.size() - 1 - i;
    const std::int64_t coord = flat % out[o];
    flat /= out[o];
    if (i < s.size()) {
      const std::int64_t d = s[s.size() - 1 - i];
      offset += (d == 1 ? 0 : coord) * stride;
      stride *= d;
    }
  }
  return v[static_cast<std::size_t>(offset)];
}

template <class F>
Constant elementwise(const NodeProto& node, const std::vector<const Constant*>& in, int type, F f) {
  Shape out;
  for (const Constant* c : in) {
    out = broadcastShapes(node, out, c->shape);
  }
  std::vector<std::vector<double>> values;
  for (const Constant* c : in) {
    values.push_back(c->values());
  }
  std::vector<double> result(static_cast<std::size_t>(product(out)));
  std::vector<double> args(in.size());
  for (std::size_t i = 0; i < result.size(); ++i) {
    for (std::size_t k = 0; k < in.size(); ++k) {
      args[k] = broadcastAt(values[k], in[k]->shape, out, static_cast<std::int64_t>(i));
    }
    result[i] = f(args);
  }
  return makeConstant(type, out, result);
}

bool isInteger(int type) {
  return type != TensorProto::FLOAT && type != TensorProto::DOUBLE;
}

Constant binary(const NodeProto& node, const std::vector<const Constant*>& in) {
  const std::string& op = node.op_type();
  const bool integer = isInteger(in[0]->type);
  const bool compare = op == "Equal" || op == "Less" || op == "Greater";
  const int type = compare ? TensorProto::BOOL : in[0]->type;
  return elementwise(node, {in[0], in[1]}, type, [&](const std::vector<double>& a) -> double {
    const double x = a[0];
    const double y = a[1];
    if (op == "Add")
      return x + y;
    if (op == "Sub")
      return x - y;
    if (op == "Mul")
      return x * y;
    if (op == "Div") {
      if (integer) {
        if (y == 0)
          throw Error(where(node) + ": integer division by zero");
        return std::trunc(x / y);
      }
      return x / y;
    }
    if (op == "Pow")
      return std::pow(x, y);
    if (op == "Mod") {
      // fmod 1: C's fmod (the dividend's sign); 0, integers only: the
      // divisor's sign, as Python's %.
      if (integer && y == 0)
        throw Error(where(node) + ": integer modulo by zero");
      const double r = std::fmod(x, y);
      const bool cStyle = intAttribute(node, "fmod", 0) != 0;
      return !cStyle && r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
    }
    if (op == "Equal")
      return x == y;
    if (op == "Less")
      return x < y;
    return x > y;
  });
}

Constant gather(const NodeProto& node, const Constant& data, const Constant& indices) {
  const std::int64_t rank = static_cast<std::int64_t>(data.shape.size());
  const std::int64_t axis = normalizeAxis(intAttribute(node, "axis", 0), rank, where(node));
  const Shape& ds = data.shape;
  Shape out(ds.begin(), ds.begin() + axis);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), ds.begin() + axis + 1, ds.end());
  const std::vector<double> v = data.values();
  const std::vector<std::int64_t> idx = indices.ints();
  const std::int64_t outer = product(Shape(ds.begin(), ds.begin() + axis));
  const std::int64_t inner = product(Shape(ds.begin() + axis + 1, ds.end()));
  const std::int64_t n = ds[static_cast<std::size_t>(axis)];
  std::vector<double> result;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i : idx) {
      if (i < -n || i >= n) {
        throw Error(where(node) + ": index " + std::to_string(i) + " is out of range");
      }
      const std::int64_t row = i < 0 ? i + n : i;
      for (std::int64_t k = 0; k < inner; ++k) {
        result.push_back(v[static_cast<std::size_t>((o * n + row) * inner + k)]);
      }
    }
  }
  return makeConstant(data.type, out, result);
}

Constant concat(const NodeProto& node, const std::vector<const Constant*>& in) {
  const std::int64_t rank = static_cast<std::int64_t>(in[0]->shape.size());
  const std::int64_t axis = normalizeAxis(intAttribute(node, "axis", 0), rank, where(node));
  Shape out = in[0]->shape;
  out[static_cast<std::size_t>(axis)] = 0;
  for (const Constant* c : in) {
    if (c->shape.size() != out.size()) {
      throw Error(where(node) + ": inputs of different ranks");
    }
    out[static_cast<std::size_t>(axis)] += c->shape[static_cast<std::size_t>(axis)];
  }
  const std::int64_t outer = product(Shape(out.begin(), out.begin() + axis));
  std::vector<double> result;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (const Constant* c : in) {
      const std::vector<double> v = c->values();
      const std::int64_t block = product(Shape(c->shape.begin() + axis, c->shape.end()));
      result.insert(result.end(), v.begin() + o * block, v.begin() + (o + 1) * block);
    }
  }
  return makeConstant(in[0]->type, out, result);
}

// ScatterND: data with the slices that indices name (its last dim a prefix
// of data's index) set to updates, or combined with them by `reduction`.
std::optional<Constant> scatterND(const NodeProto& node, const std::vector<const Constant*>& in) {
  const Constant& data = *in[0];
  const Shape& is = in[1]->shape;
  const std::size_t rank = data.shape.size();
  if (is.empty() || is.back() < 1 || static_cast<std::size_t>(is.back()) > rank) {
    return std::nullopt; // left to the mapping's checks
  }
  const std::size_t k = static_cast<std::size_t>(is.back());
  Shape expected(is.begin(), is.end() - 1);
  expected.insert(expected.end(), data.shape.begin() + static_cast<std::ptrdiff_t>(k),
                  data.shape.end());
  if (in[2]->shape != expected) {
    return std::nullopt;
  }
  const std::string reduction = stringAttribute(node, "reduction", "none");
  const std::int64_t slice =
      product(Shape(data.shape.begin() + static_cast<std::ptrdiff_t>(k), data.shape.end()));
  std::vector<double> out = data.values();
  const std::vector<double> updates = in[2]->values();
  const std::vector<std::int64_t> idx = in[1]->ints();
  for (std::size_t t = 0; t * k < idx.size(); ++t) {
    std::int64_t at = 0;
    for (std::size_t d = 0; d < k; ++d) {
      std::int64_t i = idx[t * k + d];
      const std::int64_t n = data.shape[d];
      if (i < -n || i >= n) {
        throw Error(where(node) + ": index " + std::to_string(i) + " is out of range");
      }
      at = at * n + (i < 0 ? i + n : i);
    }
    for (std::int64_t j = 0; j < slice; ++j) {
      double& x = out[static_cast<std::size_t>(at * slice + j)];
      const double u = updates[t * static_cast<std::size_t>(slice) + static_cast<std::size_t>(j)];
      x = reduction == "add"   ? x + u
          : reduction == "mul" ? x * u
          : reduction == "max" ? std::max(x, u)
          : reduction == "min" ? std::min(x, u)
                               : u;
    }
  }
  return makeConstant(data.type, data.shape, out);
}

// Transpose by `perm` (default: the dims reversed).
std::optional<Constant> transpose(const NodeProto& node, const Constant& data) {
  const std::size_t rank = data.shape.size();
  std::vector<std::int64_t> perm;
  if (const ::onnx::AttributeProto* a = findAttribute(node, "perm")) {
    perm.assign(a->ints().begin(), a->ints().end());
  } else {
    for (std::size_t d = rank; d-- > 0;) {
      perm.push_back(static_cast<std::int64_t>(d));
    }
  }
  std::vector<bool> seen(rank, false);
  for (std::int64_t p : perm) {
    if (perm.size() != rank || p < 0 || p >= static_cast<std::int64_t>(rank) ||
        seen[static_cast<std::size_t>(p)]) {
      return std::nullopt; // left to the mapping's checks
    }
    seen[static_cast<std::size_t>(p)] = true;
  }
  Shape out(rank);
  const Shape strides = stridesOf(data.shape);
  for (std::size_t d = 0; d < rank; ++d) {
    out[d] = data.shape[static_cast<std::size_t>(perm[d])];
  }
  const std::vector<double> v = data.values();
  std::vector<double> result(v.size());
  Shape at(rank, 0); // the output's index, an odometer
  for (std::size_t i = 0; i < result.size(); ++i) {
    std::int64_t from = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      from += at[d] * strides[static_cast<std::size_t>(perm[d])];
    }
    result[i] = v[static_cast<std::size_t>(from)];
    for (std::size_t d = rank; d-- > 0;) {
      if (++at[d] < out[d]) {
        break;
      }
      at[d] = 0;
    }
  }
  return makeConstant(data.type, out, result);
}

Constant slice(const NodeProto& node, const std::vector<const Constant*>& in) {
  const Shape& s = in[0]->shape;
  const std::int64_t rank = static_cast<std::int64_t>(s.size());
  const std::vector<std::int64_t> starts = in[1]->ints();
  const std::vector<std::int64_t> ends = in[2]->ints();
  std::vector<std::int64_t> axes;
  if (in.size() > 3 && in[3] != nullptr) {
    axes = in[3]->ints();
  } else {
    for (std::size_t i = 0; i < starts.size(); ++i) {
      axes.push_back(static_cast<std::int64_t>(i));
    }
  }
  std::vector<std::int64_t> steps(starts.size(), 1);
  if (in.size() > 4 && in[4] != nullptr) {
    steps = in[4]->ints();
  }
  Shape begin(s.size(), 0);
  Shape step(s.size(), 1);
  Shape out = s;
  for (std::size_t i = 0; i < starts.size() && i < axes.size() && i < ends.size(); ++i) {
    const std::size_t a = static_cast<std::size_t>(normalizeAxis(axes[i], rank, where(node)));
    const std::int64_t n = s[a];
    if (steps[i] == 0) {
      throw Error(where(node) + ": step 0");
    }
    auto clampIndex = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
      v = v < 0 ? v + n : v;
      return std::clamp(v, lo, hi);
    };
    if (steps[i] > 0) {
      const std::int64_t b = clampIndex(starts[i], 0, n);
      const std::int64_t e = clampIndex(ends[i], 0, n);
      begin[a] = b;
      out[a] = std::max<std::int64_t>(0, (e - b + steps[i] - 1) / steps[i]);
    } else {
      const std::int64_t b = clampIndex(starts[i], -1, n - 1);
      const std::int64_t e = clampIndex(ends[i], -1, n - 1);
      begin[a] = b;
      out[a] = std::max<std::int64_t>(0, (b - e - steps[i] - 1) / -steps[i]);
    }
    step[a] = steps[i];
  }
  const std::vector<double> v = in[0]->values();
  const Shape strides = stridesOf(s);
  std::vector<double> result(static_cast<std::size_t>(product(out)));
  for (std::size_t flat = 0; flat < result.size(); ++flat) {
    std::int64_t rest = static_cast<std::int64_t>(flat);
    std::int64_t offset = 0;
    for (std::size_t d = out.size(); d-- > 0;) {
      const std::int64_t coord = rest % out[d];
      rest /= out[d];
      offset += (begin[d] + coord * step[d]) * strides[d];
    }
    result[flat] = v[static_cast<std::size_t>(offset)];
  }
  return makeConstant(in[0]->type, out, result);
}

// The output shape of Reshape: 0 copies the input dim (allowzero 0), one -1 is inferred.
Shape reshapeTarget(const NodeProto& node, const Shape& input, std::vector<std::int64_t> target) {
  std::int64_t known = 1;
  std::optional<std::size_t> infer;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && intAttribute(node, "allowzero", 0) == 0 && i < input.size()) {
      target[i] = input[i];
    }
    if (target[i] == -1) {
      if (infer)
        throw Error(where(node) + ": more than one -1 in the shape");
      infer = i;
    } else {
      known *= target[i];
    }
  }
  if (infer) {
    if (known == 0)
      throw Error(where(node) + ": cannot infer the -1 dim");
    target[*infer] = product(input) / known;
  }
  if (product(target) != product(input)) {
    throw Error(where(node) + ": shape does not hold as many elements as the input");
  }
  return target;
}

Constant withShape(const Constant& c, Shape shape) {
  Constant out = c;
  out.shape = std::move(shape);
  return out;
}

Shape unsqueezed(const NodeProto& node, const Shape& s, const std::vector<std::int64_t>& axes) {
  const std::int64_t rank = static_cast<std::int64_t>(s.size() + axes.size());
  std::vector<bool> inserted(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : axes) {
    inserted[static_cast<std::size_t>(normalizeAxis(a, rank, where(node)))] = true;
  }
  Shape out;
  std::size_t next = 0;
  for (std::int64_t i = 0; i < rank; ++i) {
    out.push_back(inserted[static_cast<std::size_t>(i)] ? 1 : s[next++]);
  }
  return out;
}

Shape squeezed(const NodeProto& node, const Shape& s, const std::vector<std::int64_t>& axes) {
  const std::int64_t rank = static_cast<std::int64_t>(s.size());
  std::vector<bool> drop(s.size(), false);
  for (std::int64_t a : axes) {
    drop[static_cast<std::size_t>(normalizeAxis(a, rank, where(node)))] = true;
  }
  Shape out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (axes.empty() ? s[i] != 1 : !drop[i]) {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::optional<Constant> foldShapeOp(const NodeProto& node, const std::vector<const Constant*>& in) {
  const std::string& op = node.op_type();
  const auto axesOf = [&]() {
    return in.size() > 1 && in[1] != nullptr ? in[1]->ints() : intsAttribute(node, "axes");
  };
  if (op == "Identity")
    return *in[0];
  if (op == "Reshape")
    return withShape(*in[0], reshapeTarget(node, in[0]->shape, in[1]->ints()));
  if (op == "Unsqueeze")
    return withShape(*in[0], unsqueezed(node, in[0]->shape, axesOf()));
  if (op == "Squeeze")
    return withShape(*in[0], squeezed(node, in[0]->shape, axesOf()));
  if (op == "Flatten") {
    const std::int64_t rank = static_cast<std::int64_t>(in[0]->shape.size());
    const std::int64_t axis = intAttribute(node, "axis", 1);
    const std::int64_t a = axis < 0 ? axis + rank : axis;
    const Shape& s = in[0]->shape;
    return withShape(
        *in[0], {product(Shape(s.begin(), s.begin() + a)), product(Shape(s.begin() + a, s.end()))});
  }
  if (op == "Shape") {
    Shape s = in[0]->shape;
    return makeInts({static_cast<std::int64_t>(s.size())}, s);
  }
  if (op == "Size")
    return makeInts({}, {in[0]->count()});
  return std::nullopt;
}

// Elementwise functions folded on constants, in double precision.
const std::map<std::string, double (*)(double)>& unaryFunctions() {
  static const std::map<std::string, double (*)(double)> table = {
      {"Neg", [](double x) { return -x; }},
      {"Not", [](double x) { return x == 0.0 ? 1.0 : 0.0; }},
      {"Abs", [](double x) { return std::fabs(x); }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Sin", [](double x) { return std::sin(x); }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Tanh", [](double x) { return std::tanh(x); }},
      {"Erf", [](double x) { return std::erf(x); }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Reciprocal", [](double x) { return 1.0 / x; }},
      {"Relu", [](double x) { return x > 0.0 ? x : 0.0; }},
      {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }}};
  return table;
}

// Trilu of a constant: the lower (upper = 0) or upper triangle of the last two
// dims from diagonal k (an optional second input), zeros elsewhere.
std::optional<Constant> trilu(const NodeProto& node, const std::vector<const Constant*>& in) {
  const Shape& s = in[0]->shape;
  if (s.size() < 2) {
    throw Error(where(node) + ": the input must have at least 2 dims");
  }
  const std::int64_t k = in.size() > 1 && in[1] != nullptr ? in[1]->ints().at(0) : 0;
  const bool upper = intAttribute(node, "upper", 1) != 0;
  const std::int64_t rows = s[s.size() - 2];
  const std::int64_t cols = s.back();
  std::vector<double> v = in[0]->values();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::int64_t flat = static_cast<std::int64_t>(i);
    const std::int64_t c = flat % cols;
    const std::int64_t r = (flat / cols) % rows;
    if (upper ? c - r < k : c - r > k) {
      v[i] = 0.0;
    }
  }
  return makeConstant(in[0]->type, s, v);
}

std::optional<Constant> foldValueOp(const NodeProto& node, const std::vector<const Constant*>& in) {
  const std::string& op = node.op_type();
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Mod" ||
      op == "Equal" || op == "Less" || op == "Greater") {
    return binary(node, in);
  }
  if (op == "Cast") {
    const int to = static_cast<int>(intAttribute(node, "to", TensorProto::FLOAT));
    if (!isFoldable(to))
      return std::nullopt;
    return makeConstant(to, in[0]->shape, in[0]->values());
  }
  if (const auto f = unaryFunctions().find(op); f != unaryFunctions().end()) {
    // Float functions of integer constants are not folded (ONNX types them float only).
    if (op != "Neg" && op != "Not" && op != "Abs" && isInteger(in[0]->type)) {
      return std::nullopt;
    }
    return elementwise(node, {in[0]}, in[0]->type,
                       [&](const std::vector<double>& a) { return f->second(a[0]); });
  }
  if (op == "Trilu") {
    return trilu(node, in);
  }
  if (op == "Where") {
    return elementwise(node, {in[0], in[1], in[2]}, in[1]->type,
                       [](const std::vector<double>& a) { return a[0] != 0.0 ? a[1] : a[2]; });
  }
  if (op == "Expand") {
    const Shape target = in[1]->ints();
    if (!foldableShape(target)) {
      return std::nullopt;
    }
    const Constant ones = makeConstant(
        in[0]->type, target, std::vector<double>(static_cast<std::size_t>(product(target)), 0.0));
    return elementwise(node, {in[0], &ones}, in[0]->type,
                       [](const std::vector<double>& a) { return a[0]; });
  }
  if (op == "Gather")
    return gather(node, *in[0], *in[1]);
  if (op == "Concat")
    return concat(node, in);
  if (op == "Slice")
    return slice(node, in);
  if (op == "Transpose")
    return transpose(node, *in[0]);
  if (op == "ScatterND")
    return scatterND(node, in);
  if (op == "Range") {
    const double start = in[0]->values().at(0);
    const double limit = in[1]->values().at(0);
    const double delta = in[2]->values().at(0);
    if (delta == 0)
      throw Error(where(node) + ": delta 0");
    const double n = std::max(0.0, std::ceil((limit - start) / delta));
    if (n > static_cast<double>(kFoldLimit))
      return std::nullopt;
    std::vector<double> v;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
      v.push_back(start + static_cast<double>(i) * delta);
    }
    return makeConstant(in[0]->type, {static_cast<std::int64_t>(v.size())}, v);
  }
  return std::nullopt;
}

} // namespace

std::optional<std::vector<Constant>> fold(const NodeProto& node,
                                          const std::vector<const Constant*>& inputs) {
  if (!defaultDomain(node.domain())) {
    return std::nullopt;
  }
  const std::string& op = node.op_type();
  if (op == "ConstantOfShape") {
    if (inputs.empty() || inputs[0] == nullptr) {
      return std::nullopt;
    }
    const Shape shape = inputs[0]->ints();
    if (!foldableShape(shape)) {
      return std::nullopt;
    }
    Constant value = makeConstant(TensorProto::FLOAT, {1}, {0.0});
    if (const ::onnx::AttributeProto* a = findAttribute(node, "value")) {
      value = decodeTensor(a->t(), where(node));
    }
    if (!isFoldable(value.type) || value.count() != 1)
      return std::nullopt;
    return std::vector<Constant>{makeConstant(
        value.type, shape,
        std::vector<double>(static_cast<std::size_t>(product(shape)), value.values()[0]))};
  }
  for (const Constant* c : inputs) {
    if (c != nullptr && (!c->present || c->count() > kFoldLimit || !isFoldable(c->type))) {
      return std::nullopt;
    }
  }
  // Absent inputs (empty names) are optional ones of Slice (axes, steps) and
  // Squeeze/Unsqueeze (axes) only; any other is left to the mapping's checks.
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const bool optional =
        (op == "Slice" && i >= 3) || ((op == "Squeeze" || op == "Unsqueeze") && i >= 1);
    if (inputs[i] == nullptr && !optional) {
      return std::nullopt;
    }
  }
  if (inputs.empty()) {
    return std::nullopt;
  }
  std::optional<Constant> out = foldShapeOp(node, inputs);
  if (!out) {
    out = foldValueOp(node, inputs);
  }
  if (!out || out->count() > kFoldLimit) {
    return std::nullopt;
  }
  return std::vector<Constant>{std::move(*out)};
}

} // namespace tapestry::onnx_import::detail
