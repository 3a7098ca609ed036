// Tests for the CPU backend (backends/cpu) and the Backend interface: every
// standard-library kernel against a naive implementation written here (double
// precision, plain index loops over flat arrays), for each dtype its template
// allows; and every kernel run sharded — the index space tiled many ways,
// reduction dims included, each shard given only its selections (copied, as
// sub-views, or as whole-tensor views), partials joined with the output's
// combine — against the same kernel unsharded. Also: 16-bit float
// conversions, views, copies, combine, and the errors of the interface.
//
// Longer than 800 lines on purpose: tests/unit keeps one file per module, and
// this module's cases read best side by side (each is short and independent).
#include <catch2/catch.hpp>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "backends/cpu/block_cache.hpp"
#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/cpu_isa.hpp"
#include "backends/products.hpp"
#include "backends/reference.hpp"
#include "backends/tensor_io.hpp"
#include "backends/walk.hpp"
#include "core/graph/expansion.hpp"
#include "core/graph/loader.hpp"
#include "core/json/json.hpp"
#include "core/metakernel/library.hpp"

using namespace tapestry;
using namespace tapestry::backend;
using Catch::Matchers::Contains;

namespace {

using Shape = std::vector<std::int64_t>;

const metakernel::MetakernelLibrary& lib() {
  static const metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::standard();
  return library;
}

CpuBackend& cpu() {
  static CpuBackend backend = [] {
    CpuBackend::setBlasThreads(1); // tiny products: threads would only wait for each other
    return CpuBackend(4);
  }();
  return backend;
}

// ---------------------------------------------------------------- graphs

struct TensorSpec {
  std::string name;
  std::string dtype;
  Shape shape;
};

std::string shapeJson(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + "]";
}

// A one-operation graph "op" of `kernel` over the given input tensors.
graph::ExpandedGraph oneOp(const std::string& kernel, const std::vector<TensorSpec>& tensors,
                           const std::string& inputs, const std::string& params = "{}",
                           const std::string& outputs = "") {
  std::string text = R"({"tapestry": "graph/v1", "name": "g", "tensors": {)";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    text += (i ? ", " : "") + ("\"" + tensors[i].name + "\": {\"dtype\": \"" + tensors[i].dtype +
                               "\", \"shape\": " + shapeJson(tensors[i].shape) + "}");
  }
  text += R"(}, "operations": [{"name": "op", "kernel": ")" + kernel + R"(", "params": )" + params +
          R"(, "inputs": )" + inputs +
          (outputs.empty() ? std::string() : R"(, "outputs": )" + outputs) + "}]}";
  json::Document doc = json::Document::parse(SourceFile("g.json", text));
  graph::Graph graph = graph::decodeGraph(json::Value(doc));
  return graph::expand(graph, lib());
}

// ---------------------------------------------------------------- values

double loadDouble(DType dtype, const std::byte* p) {
  switch (dtype) {
  case DType::Float32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::Float64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::Float16: {
    Half h;
    std::memcpy(&h.bits, p, 2);
    return halfToFloat(h);
  }
  case DType::BFloat16: {
    BFloat16 b;
    std::memcpy(&b.bits, p, 2);
    return bfloat16ToFloat(b);
  }
  case DType::Int32: {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::Bool:
    return std::to_integer<int>(*p) != 0 ? 1 : 0;
  case DType::Int64:
    break;
  }
  std::int64_t v;
  std::memcpy(&v, p, 8);
  return static_cast<double>(v);
}

void storeDouble(DType dtype, std::byte* p, double x) {
  switch (dtype) {
  case DType::Float32: {
    float v = static_cast<float>(x);
    std::memcpy(p, &v, 4);
    return;
  }
  case DType::Float64:
    std::memcpy(p, &x, 8);
    return;
  case DType::Float16: {
    Half h = floatToHalf(static_cast<float>(x));
    std::memcpy(p, &h.bits, 2);
    return;
  }
  case DType::BFloat16: {
    BFloat16 b = floatToBFloat16(static_cast<float>(x));
    std::memcpy(p, &b.bits, 2);
    return;
  }
  case DType::Int32: {
    auto v = static_cast<std::int32_t>(x);
    std::memcpy(p, &v, 4);
    return;
  }
  case DType::Bool:
    *p = static_cast<std::byte>(x != 0 ? 1 : 0);
    return;
  case DType::Int64:
    break;
  }
  auto v = static_cast<std::int64_t>(x);
  std::memcpy(p, &v, 8);
}

// The elements of a dense host buffer as doubles, row-major.
std::vector<double> values(const Buffer& b) {
  std::vector<double> out(static_cast<std::size_t>(b.elementCount()));
  const std::size_t size = dtypeSize(b.dtype());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = loadDouble(b.dtype(), b.data() + i * size);
  }
  return out;
}

// Deterministic values: floats in [lo, hi), ints in [lo, hi] (rounded).
Buffer randomBuffer(DType dtype, const Shape& shape, std::uint64_t seed, double lo = -1,
                    double hi = 1) {
  Buffer b = Buffer::host(dtype, shape);
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 12345;
  const std::size_t size = dtypeSize(dtype);
  for (std::int64_t i = 0; i < b.elementCount(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) * 0x1.0p-53;
    double x = lo + (hi - lo) * u;
    if (!isFloat(dtype)) {
      x = std::floor(lo + (hi - lo + 1) * u);
    }
    storeDouble(dtype, b.data() + static_cast<std::size_t>(i) * size, x);
  }
  return b;
}

// max |a - b| / max |b| (0 when both are all zeros); NaN anywhere fails.
double relError(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0;
  double scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      return INFINITY;
    }
    diff = std::max(diff, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale == 0 ? diff : diff / scale;
}

double tolerance(DType dtype, bool reductionSplit = false) {
  switch (dtype) {
  case DType::Float32:
    return reductionSplit ? 1e-4 : 1e-5;
  case DType::Float64:
    return 1e-10;
  case DType::Float16:
  case DType::BFloat16:
    return 2e-2;
  case DType::Int32:
  case DType::Int64:
  case DType::Bool:
    break;
  }
  return 0;
}

// ---------------------------------------------------------------- naive reference

std::int64_t numel(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}
Shape unravel(std::int64_t flat, const Shape& s) {
  Shape idx(s.size());
  for (std::size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}
std::int64_t ravel(const Shape& idx, const Shape& s) {
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < s.size(); ++d) {
    flat = flat * s[d] + idx[d];
  }
  return flat;
}
std::int64_t normAxis(std::int64_t axis, std::size_t rank) {
  return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis;
}

struct Tensor {
  Shape shape;
  std::vector<double> v;
  double at(const Shape& idx) const { return v[static_cast<std::size_t>(ravel(idx, shape))]; }
};

double applyUnary(const std::string& k, double x) {
  if (k == "relu") {
    return x > 0 ? x : 0;
  }
  if (k == "gelu") {
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  }
  if (k == "tanh") {
    return std::tanh(x);
  }
  if (k == "gelu_tanh") {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  if (k == "exp") {
    return std::exp(x);
  }
  if (k == "silu") {
    return x / (1 + std::exp(-x));
  }
  if (k == "sigmoid") {
    return 1 / (1 + std::exp(-x));
  }
  if (k == "erf") {
    return std::erf(x);
  }
  if (k == "sqrt") {
    return std::sqrt(x);
  }
  if (k == "reciprocal") {
    return 1 / x;
  }
  if (k == "log") {
    return std::log(x);
  }
  if (k == "abs") {
    return std::abs(x);
  }
  return -x; // neg
}

// The unary kernels with float params, x op params["value"] (or clip's bounds).
double applyWithParams(const std::string& k, double x, const Json& params) {
  if (k == "clip") {
    return std::min(std::max(x, params["min"].get<double>()), params["max"].get<double>());
  }
  const double v = params["value"].get<double>();
  return k == "add_scalar"    ? x + v
         : k == "mul_scalar"  ? x * v
         : k == "rsub_scalar" ? v - x
         : k == "rdiv_scalar" ? v / x
         : k == "div_scalar"  ? x / v
                              : std::pow(x, v); // pow_scalar
}

// Issue 34's elementwise kernels, one element (tests give 1 or 0): unary
// (with their float params) and binary.
std::optional<double> newUnary(const std::string& k, double x, const Json& params) {
  auto alpha = [&](double fallback) { return params.value("alpha", fallback); };
  const std::map<std::string, double (*)(double)> math = {
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"round", [](double v) { return std::nearbyint(v); }},
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"asin", [](double v) { return std::asin(v); }},
      {"acos", [](double v) { return std::acos(v); }},
      {"atan", [](double v) { return std::atan(v); }},
      {"sinh", [](double v) { return std::sinh(v); }},
      {"cosh", [](double v) { return std::cosh(v); }},
      {"asinh", [](double v) { return std::asinh(v); }},
      {"acosh", [](double v) { return std::acosh(v); }},
      {"atanh", [](double v) { return std::atanh(v); }},
      {"softplus", [](double v) { return std::log1p(std::exp(v)); }},
      {"softsign", [](double v) { return v / (1 + std::fabs(v)); }},
      {"sign", [](double v) { return v > 0   ? 1.0
                                     : v < 0 ? -1.0
                                             : 0.0; }},
      {"isnan", [](double v) { return std::isnan(v) ? 1.0 : 0.0; }},
      {"isinf", [](double v) { return std::isinf(v) ? 1.0 : 0.0; }},
      {"logical_not", [](double v) { return v == 0 ? 1.0 : 0.0; }}};
  if (auto it = math.find(k); it != math.end()) {
    return it->second(x);
  }
  if (k == "leaky_relu") {
    return x < 0 ? alpha(0.01) * x : x;
  }
  if (k == "elu") {
    return x < 0 ? alpha(1) * (std::exp(x) - 1) : x;
  }
  if (k == "selu") {
    const double a = alpha(1.67326319217681884765625);
    const double g = params.value("gamma", 1.05070102214813232421875);
    return x > 0 ? g * x : g * a * (std::exp(x) - 1);
  }
  if (k == "celu") {
    const double a = alpha(1);
    return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1));
  }
  if (k == "hard_sigmoid") {
    return std::clamp(alpha(0.2) * x + params.value("beta", 0.5), 0.0, 1.0);
  }
  if (k == "hard_swish") {
    return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
  }
  if (k == "thresholded_relu") {
    return x > alpha(1) ? x : 0.0;
  }
  return std::nullopt;
}

std::optional<double> newBinary(const std::string& k, double a, double b) {
  if (k == "maximum" || k == "minimum") {
    return k == "maximum" ? std::max(a, b) : std::min(a, b);
  }
  if (k == "mod") { // Python's %
    return a - std::floor(a / b) * b;
  }
  if (k == "fmod") {
    return std::fmod(a, b);
  }
  if (k == "prelu") {
    return a < 0 ? a * b : a;
  }
  const std::map<std::string, bool (*)(double, double)> tests = {
      {"equal", [](double x, double y) { return x == y; }},
      {"less", [](double x, double y) { return x < y; }},
      {"less_equal", [](double x, double y) { return x <= y; }},
      {"greater", [](double x, double y) { return x > y; }},
      {"greater_equal", [](double x, double y) { return x >= y; }},
      {"logical_and", [](double x, double y) { return x != 0 && y != 0; }},
      {"logical_or", [](double x, double y) { return x != 0 || y != 0; }},
      {"logical_xor", [](double x, double y) { return (x != 0) != (y != 0); }}};
  if (auto it = tests.find(k); it != tests.end()) {
    return it->second(a, b) ? 1.0 : 0.0;
  }
  return std::nullopt;
}

bool isUnary(const std::string& k) {
  for (const char* u : {"relu", "gelu", "gelu_tanh", "tanh", "exp", "sigmoid", "silu", "neg", "erf",
                        "sqrt", "reciprocal", "log", "abs"}) {
    if (k == u) {
      return true;
    }
  }
  return false;
}

bool hasFloatParams(const std::string& k) {
  return k == "clip" || k == "add_scalar" || k == "mul_scalar" || k == "rsub_scalar" ||
         k == "rdiv_scalar" || k == "div_scalar" || k == "pow_scalar";
}

// Pools over NCHW: each output element's window read element by element,
// positions outside the input skipped (-infinity for max; left out of the
// average's divisor unless count_include_pad).
void naivePool(const std::string& k, const Json& params, const Tensor& in, Tensor& r) {
  const Shape& is = in.shape;
  const bool global = k == "global_avgpool";
  auto pair = [&](const char* name, std::int64_t fallback) {
    return params.contains(name) ? params[name].get<Shape>() : Shape{fallback, fallback};
  };
  const Shape kernel = global ? Shape{is[2], is[3]} : pair("kernel", 1);
  const Shape stride = pair("stride", 1), padding = pair("padding", 0);
  const Shape dilation = pair("dilation", 1);
  const bool includePad =
      params.contains("count_include_pad") && params["count_include_pad"].get<bool>();
  for (std::int64_t i = 0; i < numel(r.shape); ++i) {
    Shape o = unravel(i, r.shape); // n, c, oh, ow
    double acc = k == "maxpool2d" ? -INFINITY : 0;
    std::int64_t inside = 0;
    for (std::int64_t kh = 0; kh < kernel[0]; ++kh) {
      for (std::int64_t kw = 0; kw < kernel[1]; ++kw) {
        const std::int64_t ih = o[2] * stride[0] + kh * dilation[0] - padding[0];
        const std::int64_t iw = o[3] * stride[1] + kw * dilation[1] - padding[1];
        if (ih < 0 || ih >= is[2] || iw < 0 || iw >= is[3]) {
          continue;
        }
        const double v = in.at({o[0], o[1], ih, iw});
        acc = k == "maxpool2d" ? std::max(acc, v) : acc + v;
        ++inside;
      }
    }
    const std::int64_t divisor = includePad ? kernel[0] * kernel[1] : inside;
    r.v[static_cast<std::size_t>(i)] = k == "maxpool2d" ? acc : acc / static_cast<double>(divisor);
  }
}

// batchnorm (per-channel constants along axis 1) and gather (along an axis,
// negative indices counted from its end).
void naiveChannelsAndGather(const std::string& k, const Json& params, const std::vector<Tensor>& in,
                            Tensor& r) {
  const std::int64_t count = numel(r.shape);
  if (k == "batchnorm") {
    const std::int64_t C = in[0].shape[1];
    const std::int64_t inner = count / in[0].shape[0] / C;
    const double eps = params["epsilon"].get<double>();
    for (std::int64_t i = 0; i < count; ++i) {
      const auto c = static_cast<std::size_t>((i / inner) % C);
      r.v[i] = (in[0].v[i] - in[3].v[c]) / std::sqrt(in[4].v[c] + eps) * in[1].v[c] + in[2].v[c];
    }
    return;
  }
  const Shape& ds = in[0].shape;
  const auto ax = static_cast<std::size_t>(normAxis(params["axis"].get<std::int64_t>(), ds.size()));
  const std::size_t nb = in[1].shape.size();
  for (std::int64_t i = 0; i < count; ++i) {
    Shape o = unravel(i, r.shape);
    Shape b(o.begin() + static_cast<std::ptrdiff_t>(ax),
            o.begin() + static_cast<std::ptrdiff_t>(ax + nb));
    auto j = static_cast<std::int64_t>(in[1].at(b));
    j = j < 0 ? j + ds[ax] : j;
    Shape from(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(ax));
    from.push_back(j);
    from.insert(from.end(), o.begin() + static_cast<std::ptrdiff_t>(ax + nb), o.end());
    r.v[i] = in[0].at(from);
  }
}

// The naive result of a one-operation graph's kernel: outputs in port order,
// list ports flattened. Over 120 lines: one plain branch per standard kernel,
// read side by side as the tests' reference semantics.
std::vector<Tensor> naive(const graph::Operation& op, const std::vector<Tensor>& in) {
  const std::string& k = op.kernel;
  const Json& params = op.application.params;
  std::vector<Tensor> out;
  for (const auto& port : op.application.outputs) {
    for (const auto& t : port.tensors) {
      out.push_back(Tensor{t.shape, std::vector<double>(static_cast<std::size_t>(numel(t.shape)))});
    }
  }
  Tensor& r = out[0];
  const std::int64_t count = numel(r.shape);
  if (isUnary(k)) {
    for (std::int64_t i = 0; i < count; ++i) {
      r.v[i] = applyUnary(k, in[0].v[i]);
    }
  } else if (in.size() == 1 && newUnary(k, 0.5, params)) {
    for (std::int64_t i = 0; i < count; ++i) {
      r.v[i] = *newUnary(k, in[0].v[i], params);
    }
  } else if (in.size() == 2 && newBinary(k, 1, 1)) {
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      double ab[2];
      for (int t = 0; t < 2; ++t) { // NumPy broadcasting: align right, size 1 reads 0
        const Shape& s = in[t].shape;
        Shape idx(s.size());
        for (std::size_t d = 0; d < s.size(); ++d) {
          idx[d] = s[d] == 1 ? 0 : o[o.size() - s.size() + d];
        }
        ab[t] = in[t].at(idx);
      }
      r.v[i] = *newBinary(k, ab[0], ab[1]);
    }
  } else if (hasFloatParams(k)) {
    for (std::int64_t i = 0; i < count; ++i) {
      r.v[i] = applyWithParams(k, in[0].v[i], params);
    }
  } else if (k == "add" || k == "sub" || k == "mul" || k == "div" || k == "pow") {
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      double ab[2];
      for (int t = 0; t < 2; ++t) { // NumPy broadcasting: align right, size 1 reads 0
        const Shape& s = in[t].shape;
        Shape idx(s.size());
        for (std::size_t d = 0; d < s.size(); ++d) {
          const std::int64_t od = o[o.size() - s.size() + d];
          idx[d] = s[d] == 1 ? 0 : od;
        }
        ab[t] = in[t].at(idx);
      }
      r.v[i] = k == "add"   ? ab[0] + ab[1]
               : k == "sub" ? ab[0] - ab[1]
               : k == "mul" ? ab[0] * ab[1]
               : k == "pow" ? std::pow(ab[0], ab[1])
                            : ab[0] / ab[1];
    }
  } else if (k == "where") {
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      double cxy[3];
      for (int t = 0; t < 3; ++t) { // NumPy broadcasting over all three
        const Shape& s = in[t].shape;
        Shape idx(s.size());
        for (std::size_t d = 0; d < s.size(); ++d) {
          idx[d] = s[d] == 1 ? 0 : o[o.size() - s.size() + d];
        }
        cxy[t] = in[t].at(idx);
      }
      r.v[i] = cxy[0] != 0 ? cxy[1] : cxy[2];
    }
  } else if (k == "matmul") {
    // transpose_x: X is [..., k, m]; transpose_w: W is [..., n, k].
    const bool tx = params["transpose_x"].get<bool>();
    const bool tw = params["transpose_w"].get<bool>();
    const std::size_t nb = r.shape.size() - 2;
    const std::int64_t K = tx ? in[0].shape[in[0].shape.size() - 2] : in[0].shape.back();
    auto batchOf = [&](const Shape& o, const Shape& s) { // NumPy broadcasting of batch dims
      Shape idx(s.size() - 2);
      for (std::size_t d = 0; d < idx.size(); ++d) {
        idx[d] = s[d] == 1 ? 0 : o[nb - idx.size() + d];
      }
      return idx;
    };
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      double s = 0;
      for (std::int64_t kk = 0; kk < K; ++kk) {
        Shape xi = batchOf(o, in[0].shape);
        Shape wi = batchOf(o, in[1].shape);
        xi.push_back(tx ? kk : o[nb]);
        xi.push_back(tx ? o[nb] : kk);
        wi.push_back(tw ? o[nb + 1] : kk);
        wi.push_back(tw ? kk : o[nb + 1]);
        s += in[0].at(xi) * in[1].at(wi);
      }
      r.v[i] = s;
    }
  } else if (k == "linear" || k == "linear_act") {
    // transpose_x: X is [..., k, m] (m the result's last batch dim); transpose_w: W is [n, k].
    // linear_act: then + residual (input 3, when bound), the exact GELU, the clip.
    const bool tx = params["transpose_x"].get<bool>();
    const bool tw = params["transpose_w"].get<bool>();
    const bool act = k == "linear_act";
    // linear_act's bias is optional (a bias-free projection's epilogue); `in`
    // holds the bound inputs only.
    const bool bias = op.inputs.size() > 2 && !op.inputs[2].tensors.empty();
    const Tensor* residual =
        act && op.inputs.size() > 3 && !op.inputs[3].tensors.empty() ? &in[bias ? 3 : 2] : nullptr;
    const std::int64_t K = tx ? in[0].shape[in[0].shape.size() - 2] : in[0].shape.back();
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      double s = bias ? in[2].v[o.back()] : 0.0;
      for (std::int64_t kk = 0; kk < K; ++kk) {
        Shape xi = o;
        xi.back() = kk;
        if (tx) {
          std::swap(xi[xi.size() - 2], xi.back());
        }
        s += in[0].at(xi) * in[1].at(tw ? Shape{o.back(), kk} : Shape{kk, o.back()});
      }
      if (act) {
        s += residual != nullptr ? residual->v[static_cast<std::size_t>(i)] : 0;
        if (params["gelu"].get<bool>()) {
          s = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
        }
        if (params["gelu_tanh"].get<bool>()) {
          s = applyUnary("gelu_tanh", s);
        }
        if (params["silu"].get<bool>()) {
          s = applyUnary("silu", s);
        }
        s = std::min(std::max(s, params["min"].get<double>()), params["max"].get<double>());
      }
      r.v[i] = s;
    }
  } else if (k == "sum" || k == "mean" || k == "max" || k == "min" || k == "prod") {
    const Shape& s = in[0].shape;
    const auto ax =
        static_cast<std::size_t>(normAxis(params["axis"].get<std::int64_t>(), s.size()));
    Shape reduced = s;
    reduced[ax] = 1;
    for (std::int64_t i = 0; i < numel(reduced); ++i) {
      Shape idx = unravel(i, reduced);
      double acc = k == "max" ? -INFINITY : k == "min" ? INFINITY : k == "prod" ? 1 : 0;
      for (std::int64_t a = 0; a < s[ax]; ++a) {
        idx[ax] = a;
        const double v = in[0].at(idx);
        acc = k == "max"    ? std::max(acc, v)
              : k == "min"  ? std::min(acc, v)
              : k == "prod" ? acc * v
                            : acc + v;
      }
      r.v[i] = k == "mean" ? acc / static_cast<double>(s[ax]) : acc;
    }
  } else if (k == "argmax" || k == "argmin") {
    const Shape& s = in[0].shape;
    const auto ax = static_cast<std::size_t>(normAxis(params.value("axis", 0), s.size()));
    const bool last = params.value("select_last_index", false);
    Shape reduced = s;
    reduced[ax] = 1;
    for (std::int64_t i = 0; i < numel(reduced); ++i) {
      Shape idx = unravel(i, reduced);
      std::int64_t best = 0;
      for (std::int64_t a = 1; a < s[ax]; ++a) {
        Shape at = idx;
        at[ax] = best;
        const double b = in[0].at(at);
        idx[ax] = a;
        const double v = in[0].at(idx);
        const bool better = k == "argmax" ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
        best = better ? a : best;
      }
      r.v[i] = static_cast<double>(best);
    }
  } else if (k == "softmax") {
    const Shape& s = in[0].shape;
    const auto ax =
        static_cast<std::size_t>(normAxis(params["axis"].get<std::int64_t>(), s.size()));
    Shape rows = s;
    rows[ax] = 1;
    for (std::int64_t i = 0; i < numel(rows); ++i) {
      Shape idx = unravel(i, rows);
      double total = 0;
      for (std::int64_t a = 0; a < s[ax]; ++a) {
        idx[ax] = a;
        total += std::exp(in[0].at(idx));
      }
      for (std::int64_t a = 0; a < s[ax]; ++a) {
        idx[ax] = a;
        r.v[static_cast<std::size_t>(ravel(idx, s))] = std::exp(in[0].at(idx)) / total;
      }
    }
  } else if (k == "layernorm" || k == "rmsnorm") {
    // rmsnorm: layernorm without the mean taken away and without beta.
    const bool centred = k == "layernorm";
    const std::int64_t d = in[0].shape.back();
    const double eps = params["eps"].get<double>();
    for (std::int64_t row = 0; row < count / d; ++row) {
      double mean = 0;
      for (std::int64_t j = 0; j < d && centred; ++j) {
        mean += in[0].v[row * d + j];
      }
      mean /= static_cast<double>(d);
      double var = 0;
      for (std::int64_t j = 0; j < d; ++j) {
        var += (in[0].v[row * d + j] - mean) * (in[0].v[row * d + j] - mean);
      }
      var /= static_cast<double>(d);
      for (std::int64_t j = 0; j < d; ++j) {
        r.v[row * d + j] = (in[0].v[row * d + j] - mean) / std::sqrt(var + eps) * in[1].v[j] +
                           (centred ? in[2].v[j] : 0.0);
      }
    }
  } else if (k == "rope") {
    // x * cos + [-x2, x1] * sin along the last dim, the tables broadcast.
    const std::int64_t d = in[0].shape.back();
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      const std::int64_t j = o.back();
      Shape partner = o;
      partner.back() = j < d / 2 ? j + d / 2 : j - d / 2;
      const double rotated = j < d / 2 ? -in[0].at(partner) : in[0].at(partner);
      double table[2];
      for (int t = 0; t < 2; ++t) {
        const Shape& s = in[1 + t].shape;
        Shape idx(s.size());
        for (std::size_t a = 0; a < s.size(); ++a) {
          idx[a] = s[a] == 1 ? 0 : o[o.size() - s.size() + a];
        }
        table[t] = in[1 + t].at(idx);
      }
      r.v[i] = in[0].v[i] * table[0] + rotated * table[1];
    }
  } else if (k == "transpose") {
    const auto perm = params["perm"].get<std::vector<std::int64_t>>();
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      Shape idx(o.size());
      for (std::size_t j = 0; j < o.size(); ++j) {
        idx[static_cast<std::size_t>(normAxis(perm[j], o.size()))] = o[j];
      }
      r.v[i] = in[0].at(idx);
    }
  } else if (k == "concat") {
    const auto ax =
        static_cast<std::size_t>(normAxis(params["axis"].get<std::int64_t>(), r.shape.size()));
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape);
      std::size_t t = 0;
      while (o[ax] >= in[t].shape[ax]) {
        o[ax] -= in[t].shape[ax];
        ++t;
      }
      r.v[i] = in[t].at(o);
    }
  } else if (k == "split") {
    const Shape& s = in[0].shape;
    const auto ax =
        static_cast<std::size_t>(normAxis(params["axis"].get<std::int64_t>(), s.size()));
    for (std::int64_t i = 0; i < numel(s); ++i) {
      Shape idx = unravel(i, s);
      std::size_t t = 0;
      while (idx[ax] >= out[t].shape[ax]) {
        idx[ax] -= out[t].shape[ax];
        ++t;
      }
      out[t].v[static_cast<std::size_t>(ravel(idx, out[t].shape))] = in[0].v[i];
    }
  } else if (k == "conv2d" || k == "conv2d_act") {
    // The optional inputs by template port: bias (2) and conv2d_act's residual (3).
    const Tensor* bias = nullptr;
    const Tensor* residual = nullptr;
    std::size_t next = 2;
    if (op.inputs.size() > 2 && !op.inputs[2].tensors.empty()) {
      bias = &in[next++];
    }
    if (op.inputs.size() > 3 && !op.inputs[3].tensors.empty()) {
      residual = &in[next++];
    }
    const bool act = k == "conv2d_act";
    const double lo = act ? params["min"].get<double>() : 0;
    const double hi = act ? params["max"].get<double>() : 0;
    const auto stride = params["stride"].get<Shape>();
    const auto padding = params["padding"].get<Shape>();
    const auto dilation = params["dilation"].get<Shape>();
    const Shape& is = in[0].shape;
    const Shape& ws = in[1].shape;
    const std::int64_t groups = params["groups"].get<std::int64_t>();
    for (std::int64_t i = 0; i < count; ++i) {
      Shape o = unravel(i, r.shape); // n, o, oh, ow
      double s = bias != nullptr ? bias->v[static_cast<std::size_t>(o[1])] : 0;
      const std::int64_t cBase = groups == 1 ? 0 : o[1] * ws[1]; // the group's first channel
      for (std::int64_t c = 0; c < ws[1]; ++c) {
        for (std::int64_t kh = 0; kh < ws[2]; ++kh) {
          for (std::int64_t kw = 0; kw < ws[3]; ++kw) {
            const std::int64_t ih = o[2] * stride[0] + kh * dilation[0] - padding[0];
            const std::int64_t iw = o[3] * stride[1] + kw * dilation[1] - padding[1];
            if (ih >= 0 && ih < is[2] && iw >= 0 && iw < is[3]) {
              s += in[0].at({o[0], cBase + c, ih, iw}) * in[1].at({o[1], c, kh, kw});
            }
          }
        }
      }
      if (act) { // + residual, the activation, then clip as clip does: min(max(s, lo), hi)
        s += residual != nullptr ? residual->v[static_cast<std::size_t>(i)] : 0;
        if (params["silu"].get<bool>()) {
          s = applyUnary("silu", s);
        } else if (params["hard_swish"].get<bool>()) {
          s = *newUnary("hard_swish", s, Json::object());
        }
        s = std::min(std::max(s, lo), hi);
      }
      r.v[i] = s;
    }
  } else if (k == "embedding") {
    const std::int64_t D = in[0].shape[1];
    for (std::int64_t i = 0; i < count; ++i) {
      const auto row = static_cast<std::int64_t>(in[1].v[i / D]);
      r.v[i] = in[0].at({row, i % D});
    }
  } else if (k == "cast") {
    const std::string to = params["dtype"].get<std::string>();
    for (std::int64_t i = 0; i < count; ++i) {
      const double x = in[0].v[i];
      r.v[i] = to == "bool"                       ? (x != 0 ? 1 : 0)
               : (to == "int32" || to == "int64") ? std::trunc(x)
                                                  : x;
    }
  } else if (k == "reshape") {
    r.v = in[0].v; // row-major order is unchanged
  } else if (k == "slice") {
    const Shape starts = params["starts"].get<Shape>();
    for (std::int64_t i = 0; i < count; ++i) {
      Shape idx = unravel(i, r.shape);
      for (std::size_t d = 0; d < idx.size(); ++d) {
        idx[d] += starts[d];
      }
      r.v[i] = in[0].at(idx);
    }
  } else if (k == "maxpool2d" || k == "avgpool2d" || k == "global_avgpool") {
    naivePool(k, params, in[0], r);
  } else if (k == "batchnorm" || k == "gather") {
    naiveChannelsAndGather(k, params, in, r);
  } else {
    FAIL("no naive reference for " << k);
  }
  return out;
}

// ---------------------------------------------------------------- running

struct Inputs {
  std::vector<Buffer> buffers; // op.inputs flattened, in order
  std::vector<PortViews> views;
};

// Host inputs for a one-operation graph: drawn by drawInputs (so embedding
// indices are in range), except tensors the test overrides by name.
Inputs makeInputs(const graph::ExpandedGraph& g, std::uint64_t seed,
                  const std::map<std::string, Buffer>& overrides = {}) {
  const graph::Operation& op = g.operations[0];
  TensorBuffers drawn = drawInputs(g, seed);
  Inputs in;
  for (const auto& port : op.inputs) {
    PortViews views;
    for (std::size_t t : port.tensors) {
      const std::string& name = g.tensors[t].name;
      auto it = overrides.find(name);
      in.buffers.push_back(it != overrides.end() ? it->second : drawn.at(name));
      views.push_back(in.buffers.back().view());
    }
    in.views.push_back(std::move(views));
  }
  return in;
}

// Runs the op unsharded; returns its outputs (flattened port order).
std::vector<Buffer> runWhole(const graph::ExpandedGraph& g, const Inputs& in) {
  const graph::Operation& op = g.operations[0];
  std::vector<Buffer> outs;
  std::vector<PortViews> views;
  for (const auto& port : op.application.outputs) {
    PortViews pv;
    for (const auto& t : port.tensors) {
      outs.push_back(cpu().allocate(parseDType(t.dtype), ZRange::fromShape(ZPoint(t.shape)), 0));
      pv.push_back(outs.back().view());
    }
    views.push_back(std::move(pv));
  }
  runUnsharded(cpu(), op, in.views, views);
  return outs;
}

// Compares the op's unsharded result with the naive reference.
void checkNaive(const graph::ExpandedGraph& g, const Inputs& in) {
  const graph::Operation& op = g.operations[0];
  std::vector<Tensor> naiveIn;
  for (const Buffer& b : in.buffers) {
    naiveIn.push_back(Tensor{b.region().shape().vector(), values(b)});
  }
  std::vector<Tensor> expected = naive(op, naiveIn);
  std::vector<Buffer> got = runWhole(g, in);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(op.kernel << " output " << i << " " << dtypeName(got[i].dtype()) << " "
                   << got[i].region().toString());
    CHECK(relError(values(got[i]), expected[i].v) <= tolerance(got[i].dtype()));
  }
}

enum class ViewMode { Copy, Sub, Whole };

// Runs the op split by `split` (parts per index dim), each shard on views of
// only its selections, and compares with the unsharded result. Over 120 lines:
// the shard loop with its three view modes and the per-dtype comparison is one
// sequence that a failure report walks through.
void checkSharded(const graph::ExpandedGraph& g, const Inputs& in, const Shape& split,
                  ViewMode mode, Backend& backend, const std::set<std::string>& constants = {}) {
  const graph::Operation& op = g.operations[0];
  const metakernel::Application& app = op.application;
  bool reductionSplit = false;
  for (std::size_t d : app.reductionDims) {
    reductionSplit = reductionSplit || split[d] > 1;
  }
  // A plan never writes one element of an output without combine from two
  // shards (a reshape split on a minor term of a merged dim): skip such splits.
  const std::vector<ZRange> shards = app.index.tile(split);
  std::vector<ShardSelections> selections;
  for (const ZRange& shard : shards) {
    selections.push_back(shardSelections(op, shard));
  }
  bool anyPlain = false;
  for (const auto& port : app.outputs) {
    anyPlain = anyPlain || !port.combine;
  }
  for (std::size_t a = 0; anyPlain && a < shards.size(); ++a) {
    const ShardSelections& sa = selections[a];
    for (std::size_t b = a + 1; b < shards.size(); ++b) {
      const ShardSelections& sb = selections[b];
      for (std::size_t p = 0; p < app.outputs.size(); ++p) {
        for (std::size_t t = 0; !app.outputs[p].combine && t < sa.outputs[p].size(); ++t) {
          if (!sa.outputs[p][t].isEmpty() && !sb.outputs[p][t].isEmpty() &&
              sa.outputs[p][t].intersects(sb.outputs[p][t])) {
            return;
          }
        }
      }
    }
  }
  std::vector<Buffer> expected = runWhole(g, in);
  // Results start at the combine identity (or zero) and receive every shard.
  std::vector<Buffer> results;
  std::vector<std::optional<metakernel::Combine>> combines;
  for (const auto& port : app.outputs) {
    for (const auto& t : port.tensors) {
      results.push_back(Buffer::host(parseDType(t.dtype), t.shape));
      combines.push_back(port.combine);
      if (port.combine) {
        cpu().fillIdentity(*port.combine, results.back().view());
      }
    }
  }
  for (std::size_t shardIndex = 0; shardIndex < shards.size(); ++shardIndex) {
    const ZRange& shard = shards[shardIndex];
    INFO(op.kernel << " shard " << shard.toString());
    const ShardSelections& sel = selections[shardIndex];
    std::vector<Buffer> keep;
    std::vector<PortViews> inViews;
    std::size_t flat = 0;
    for (std::size_t p = 0; p < op.inputs.size(); ++p) {
      PortViews pv;
      for (std::size_t t = 0; t < sel.inputs[p].size(); ++t, ++flat) {
        const ZRange& region = sel.inputs[p][t];
        const Buffer& full = in.buffers[flat];
        if (region.isEmpty()) {
          pv.push_back(TensorView{}); // the shard does not touch this element
        } else if (mode == ViewMode::Copy) {
          keep.push_back(cpu().allocate(full.dtype(), region, 1));
          cpu().copyRegion(full.view(), keep.back().view(), region);
          pv.push_back(keep.back().view());
        } else if (mode == ViewMode::Sub) {
          pv.push_back(full.view(region));
        } else {
          pv.push_back(full.view());
        }
      }
      for (std::size_t t = 0; t < pv.size(); ++t) { // views of constant graph inputs
        pv[t].constant = constants.count(g.tensors[op.inputs[p].tensors[t]].name) != 0;
      }
      inViews.push_back(std::move(pv));
    }
    // Outputs: a fresh buffer per selection, or (Sub) a sub-view of a
    // full-size scratch buffer filled with a sentinel that must survive
    // outside the selection.
    std::vector<PortViews> outViews;
    std::vector<std::pair<Buffer, ZRange>> partials;
    for (std::size_t p = 0; p < op.outputs.size(); ++p) {
      PortViews pv;
      for (std::size_t t = 0; t < sel.outputs[p].size(); ++t) {
        const ZRange& region = sel.outputs[p][t];
        const auto& type = app.outputs[p].tensors[t];
        if (region.isEmpty()) {
          pv.push_back(TensorView{});
          partials.emplace_back(Buffer(), region);
          continue;
        }
        if (mode == ViewMode::Sub) {
          Buffer scratch = Buffer::host(parseDType(type.dtype), type.shape);
          std::memset(scratch.data(), 0x5A, static_cast<std::size_t>(scratch.byteSize()));
          pv.push_back(scratch.view(region));
          partials.emplace_back(scratch, region);
        } else {
          Buffer b = cpu().allocate(parseDType(type.dtype), region, 1);
          pv.push_back(b.view());
          partials.emplace_back(b, region);
        }
      }
      outViews.push_back(std::move(pv));
    }
    backend.runKernel(op, shard, inViews, outViews, 1);
    for (std::size_t i = 0; i < partials.size(); ++i) {
      const auto& [partial, region] = partials[i];
      if (region.isEmpty()) {
        continue;
      }
      if (mode == ViewMode::Sub) { // nothing outside the selection was written
        const std::size_t size = dtypeSize(partial.dtype());
        bool untouched = true;
        partial.region().forEachPoint([&](const ZPoint& pt) {
          if (region.contains(pt)) {
            return;
          }
          const std::byte* at = partial.data() + partial.view().offsetOf(pt.coords()) *
                                                     static_cast<std::int64_t>(size);
          for (std::size_t b = 0; b < size; ++b) {
            untouched = untouched && at[b] == std::byte{0x5A};
          }
        });
        CHECK(untouched);
      }
      if (combines[i]) {
        cpu().combine(*combines[i], results[i].view(), partial.view(), region);
      } else {
        cpu().copyRegion(partial.view(), results[i].view(), region);
      }
    }
  }
  for (std::size_t i = 0; i < results.size(); ++i) {
    INFO(op.kernel << " output " << i << " split " << shapeJson(split));
    const double err = relError(values(results[i]), values(expected[i]));
    CHECK(err <= tolerance(results[i].dtype(), reductionSplit));
  }
}

// Splits to try for an index space: whole; each dim alone in 2 and 3 parts;
// every dim in 2; and a mixed 3/2 pattern. Parts are capped by the extents.
std::vector<Shape> splitsFor(const ZRange& index) {
  const std::size_t rank = index.rank();
  auto capped = [&](Shape s) {
    for (std::size_t d = 0; d < rank; ++d) {
      s[d] = std::max<std::int64_t>(1, std::min(s[d], index.extent(d)));
    }
    return s;
  };
  std::vector<Shape> out{Shape(rank, 1)};
  for (std::size_t d = 0; d < rank; ++d) {
    for (std::int64_t parts : {2, 3}) {
      Shape s(rank, 1);
      s[d] = parts;
      out.push_back(capped(s));
    }
  }
  out.push_back(capped(Shape(rank, 2)));
  Shape mixed(rank, 1);
  for (std::size_t d = 0; d < rank; ++d) {
    mixed[d] = d % 2 == 0 ? 3 : 2;
  }
  out.push_back(capped(mixed));
  return out;
}

// Every split in every view mode (modes rotate over the splits to keep the
// runtime small) against the native kernel run whole: the native kernel on
// shards, and the body on shards where the template has one.
// `constants`: tensors whose views say they are constant graph inputs.
void checkShards(const graph::ExpandedGraph& g, const Inputs& in,
                 const std::set<std::string>& constants = {}) {
  const std::vector<Shape> splits = splitsFor(g.operations[0].application.index);
  for (std::size_t i = 0; i < splits.size(); ++i) {
    checkSharded(g, in, splits[i], static_cast<ViewMode>(i % 3), cpu(), constants);
  }
  // Where the template has a body, the body run sharded must agree with the
  // native kernel run whole: the check that the YAML and the C++ say the same.
  if (g.operations[0].application.body) {
    CpuBackend bodies(4, CpuKernels::Bodies);
    for (std::size_t i = 0; i < splits.size(); ++i) {
      INFO("from the body of " << g.operations[0].kernel);
      checkSharded(g, in, splits[i], static_cast<ViewMode>((i + 1) % 3), bodies);
    }
  }
}

// The whole battery for one graph: naive comparison, then checkShards.
void checkKernelOnce(const graph::ExpandedGraph& g, const Inputs& in,
                     const std::set<std::string>& constants) {
  checkNaive(g, in);
  checkShards(g, in, constants);
}

// The battery, and for a float32 output once per ISA level this CPU has
// (backends/cpu/vector_math.hpp: float32 runs that level's vector loops).
void checkKernel(const graph::ExpandedGraph& g, std::uint64_t seed = 1,
                 const std::map<std::string, Buffer>& overrides = {},
                 const std::set<std::string>& constants = {}) {
  Inputs in = makeInputs(g, seed, overrides);
  if (g.operations[0].application.outputs[0].tensors[0].dtype != "float32") {
    checkKernelOnce(g, in, constants);
    return;
  }
  for (int level = 0; level <= static_cast<int>(detectedIsa()); ++level) {
    const auto isa = static_cast<CpuIsa>(level);
    INFO("ISA level " << isaName(isa));
    setCpuIsa(isa);
    checkKernelOnce(g, in, constants);
  }
  setCpuIsa(std::nullopt);
}

const std::vector<std::string> kFloats = {"float32", "float64", "float16", "bfloat16"};
const std::vector<std::string> kAll = {"float32",  "float64", "float16",
                                       "bfloat16", "int32",   "int64"};
// What the data-movement kernels (transpose, slice, reshape, concat, split, cast) take.
const std::vector<std::string> kMoved = {"float32", "float64", "float16", "bfloat16",
                                         "int32",   "int64",   "bool"};

} // namespace

// ---------------------------------------------------------------- dtypes

TEST_CASE("float16 conversions are exact both ways and round to nearest even", "[cpu][dtype]") {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const Half h{static_cast<std::uint16_t>(bits)};
    const float f = halfToFloat(h);
    if (std::isnan(f)) {
      CHECK(std::isnan(halfToFloat(floatToHalf(f))));
    } else {
      REQUIRE(floatToHalf(f) == h);
    }
  }
  CHECK(halfToFloat(Half{0x3C00}) == 1.0f);
  CHECK(halfToFloat(Half{0x0001}) == 0x1.0p-24f); // smallest subnormal
  CHECK(halfToFloat(Half{0x7BFF}) == 65504.0f);
  CHECK(floatToHalf(1.0f + 0x1.0p-11f).bits == 0x3C00);     // tie: to even (down)
  CHECK(floatToHalf(1.0f + 3 * 0x1.0p-11f).bits == 0x3C02); // tie: to even (up)
  CHECK(floatToHalf(1.0f + 0x1.8p-11f).bits == 0x3C01);     // above the tie
  CHECK(floatToHalf(65519.0f).bits == 0x7BFF);
  CHECK(floatToHalf(65520.0f).bits == 0x7C00); // rounds up to infinity
  CHECK(floatToHalf(-INFINITY).bits == 0xFC00);
  CHECK(floatToHalf(0x1.0p-25f).bits == 0x0000); // tie between 0 and the smallest subnormal
  CHECK(floatToHalf(0x1.8p-25f).bits == 0x0001);
  CHECK(floatToHalf(-0.0f).bits == 0x8000);
  CHECK((floatToHalf(NAN).bits & 0x7C00) == 0x7C00);
}

TEST_CASE("bfloat16 conversions round to nearest even and keep NaN", "[cpu][dtype]") {
  CHECK(bfloat16ToFloat(BFloat16{0x3F80}) == 1.0f);
  CHECK(floatToBFloat16(1.0f).bits == 0x3F80);
  CHECK(floatToBFloat16(1.0f + 0x1.0p-8f).bits == 0x3F80);     // tie: to even (down)
  CHECK(floatToBFloat16(1.0f + 3 * 0x1.0p-8f).bits == 0x3F82); // tie: to even (up)
  CHECK(floatToBFloat16(1.0f + 0x1.8p-8f).bits == 0x3F81);
  CHECK(floatToBFloat16(3.4e38f).bits == 0x7F80); // rounds to infinity
  CHECK(std::isnan(bfloat16ToFloat(floatToBFloat16(NAN))));
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const BFloat16 b{static_cast<std::uint16_t>(bits)};
    const float f = bfloat16ToFloat(b);
    if (!std::isnan(f)) {
      REQUIRE(floatToBFloat16(f) == b);
    }
  }
}

TEST_CASE("dtype names", "[cpu][dtype]") {
  CHECK(parseDType("bfloat16") == DType::BFloat16);
  CHECK(dtypeSize(DType::Float16) == 2);
  CHECK_FALSE(findDType("int8").has_value());
  CHECK_THROWS_WITH(parseDType("int8"), Contains("backends cannot execute dtype \"int8\""));
  // bool: one byte (from core/expr's table), not a float, refused by the numeric dispatch.
  CHECK(parseDType("bool") == DType::Bool);
  CHECK(dtypeName(DType::Bool) == std::string("bool"));
  CHECK(dtypeSize(DType::Bool) == 1);
  CHECK_FALSE(isFloat(DType::Bool));
  CHECK_THROWS_WITH(dispatch(DType::Bool, [](auto) {}), Contains("does not compute on bool"));
  CHECK(dispatchWithBool(
      DType::Bool, [](auto tag) { return std::is_same_v<typename decltype(tag)::type, Bool>; }));
}

// ---------------------------------------------------------------- views and copies

TEST_CASE("views address regions of a buffer without copying", "[cpu][view]") {
  Buffer b = Buffer::host(DType::Float32, ZRange({2, 10}, {6, 15})); // rows 2..5, cols 10..14
  for (std::int64_t i = 0; i < b.elementCount(); ++i) {
    b.elements<float>()[static_cast<std::size_t>(i)] = static_cast<float>(i);
  }
  TensorView v = b.view();
  CHECK(v.strides == std::vector<std::int64_t>{5, 1});
  CHECK(*v.at<float>(std::vector<std::int64_t>{3, 12}) == 7.0f);
  TensorView s = v.sub(ZRange({3, 11}, {5, 13}));
  CHECK(s.data == b.data() + 6 * 4);
  CHECK(*s.at<float>(std::vector<std::int64_t>{4, 12}) == 12.0f);
  CHECK_THROWS_AS(v.sub(ZRange({0, 10}, {3, 12})), InternalError);
  CHECK(s.toString() == "float32 zr[3:5, 11:13] strides [5, 1] on the host");

  // copyRegion between views of different regions: only the overlap moves.
  Buffer c = cpu().allocate(DType::Float32, ZRange({4, 12}, {8, 14}), 0);
  cpu().copyOverlap(b.view(), c.view());
  CHECK(c.elements<float>()[0] == 12.0f); // (4, 12)
  CHECK(c.elements<float>()[3] == 18.0f); // (5, 13)
  CHECK(c.elements<float>()[4] == 0.0f);  // (6, 12): outside b
}

TEST_CASE("buffers laid out channels last: views carry the strides, copies move elements",
          "[cpu][view][layout]") {
  const std::vector<std::int64_t> shape{2, 3, 4, 5};
  CHECK(channelsLastStrides(shape) == std::vector<std::int64_t>{60, 1, 15, 3});
  CHECK(channelsLastStrides(std::vector<std::int64_t>{1, 0, 2, 2}) ==
        std::vector<std::int64_t>{4, 1, 2, 1});
  CHECK_THROWS_AS(channelsLastStrides(std::vector<std::int64_t>{2, 3}), InternalError);

  Buffer rows = Buffer::host(DType::Float32, shape);
  for (std::int64_t i = 0; i < rows.elementCount(); ++i) {
    rows.elements<float>()[static_cast<std::size_t>(i)] = static_cast<float>(i);
  }
  const ZRange all = rows.region();
  Buffer last = cpu().allocate(DType::Float32, all, 0).withStrides(channelsLastStrides(shape));
  CHECK_FALSE(last.rowMajor());
  CHECK(last.view().strides == std::vector<std::int64_t>{60, 1, 15, 3});
  cpu().copyRegion(rows.view(), last.view(), all);
  // (n, c, h, w) sits at n*60 + h*15 + w*3 + c.
  const float* raw = reinterpret_cast<const float*>(last.data());
  CHECK(raw[0] == 0.0f);
  CHECK(raw[1] == 20.0f);                                // (0, 1, 0, 0)
  CHECK(raw[3] == 1.0f);                                 // (0, 0, 0, 1)
  CHECK(raw[60 + 15 + 3 * 2 + 2] == 60.0f + 40 + 5 + 2); // (1, 2, 1, 2)
  // Sub-views keep the layout; the way back gives the row-major elements.
  const ZRange part({1, 1, 1, 1}, {2, 3, 3, 4});
  CHECK(*last.view(part).at<float>(std::vector<std::int64_t>{1, 2, 2, 3}) == 60 + 40 + 10 + 3);
  Buffer back = Buffer::host(DType::Float32, shape);
  cpu().copyRegion(last.view(), back.view(), all);
  CHECK(std::equal(back.elements<float>().begin(), back.elements<float>().end(),
                   rows.elements<float>().begin()));
  // Not row-major: no row blocks to share, and no row-major element span.
  CHECK(last.share(ZRange({0, 0, 0, 0}, {1, 3, 4, 5}), 1).data() == nullptr);
  CHECK(rows.share(ZRange({0, 0, 0, 0}, {1, 3, 4, 5}), 1).data() == rows.data());
  CHECK_THROWS_AS(last.elements<float>(), InternalError);
  CHECK_THROWS_AS(rows.withStrides({1, 2}), InternalError);
}

TEST_CASE("elementwise kernels on channels-last views equal the row-major results",
          "[cpu][kernel][layout]") {
  // relu, then add with a [1, C, 1, 1] bias broadcast, on channels-last views.
  const Shape shape{2, 8, 5, 6};
  const ZRange all = ZRange::fromShape(ZPoint(shape));
  auto channelsLast = [&] {
    return cpu().allocate(DType::Float32, all, 0).withStrides(channelsLastStrides(shape));
  };
  const graph::ExpandedGraph relu = oneOp("relu", {{"x", "float32", shape}}, R"({"input": "x"})");
  const graph::ExpandedGraph add = oneOp(
      "add", {{"a", "float32", shape}, {"b", "float32", {1, 8, 1, 1}}}, R"({"A": "a", "B": "b"})");
  const TensorBuffers in = drawInputs(relu, 3);
  const TensorBuffers bias = drawInputs(add, 4);
  Buffer x = channelsLast();
  cpu().copyRegion(in.at("x").view(), x.view(), all);
  Buffer h = channelsLast();
  Buffer y = channelsLast();
  const std::vector<PortViews> reluIn{{x.view()}}, reluOut{{h.view()}};
  cpu().runKernel(relu.operations[0], relu.operations[0].application.index, reluIn, reluOut);
  const std::vector<PortViews> addIn{{h.view()}, {bias.at("b").view()}}, addOut{{y.view()}};
  cpu().runKernel(add.operations[0], add.operations[0].application.index, addIn, addOut);
  Buffer got = Buffer::host(DType::Float32, shape);
  cpu().copyRegion(y.view(), got.view(), all);
  // The same in row-major buffers.
  auto result = [](const graph::ExpandedGraph& g, const TensorBuffers& values) {
    return values.at(g.tensors[g.outputs[0]].name);
  };
  const Buffer hidden = result(relu, evaluateGraph(cpu(), relu, in));
  const Buffer want =
      result(add, evaluateGraph(cpu(), add, TensorBuffers{{"a", hidden}, {"b", bias.at("b")}}));
  CHECK(std::equal(got.elements<float>().begin(), got.elements<float>().end(),
                   want.elements<float>().begin()));
  // MobileNetV3's activations between its convolutions, channels last too.
  for (const char* kernel : {"hard_swish", "hard_sigmoid"}) {
    INFO(kernel);
    const graph::ExpandedGraph act = oneOp(kernel, {{"x", "float32", shape}}, R"({"input": "x"})");
    Buffer out = channelsLast();
    const std::vector<PortViews> actOut{{out.view()}};
    cpu().runKernel(act.operations[0], act.operations[0].application.index, reluIn, actOut);
    Buffer rowMajor = Buffer::host(DType::Float32, shape);
    cpu().copyRegion(out.view(), rowMajor.view(), all);
    const Buffer expected = result(act, evaluateGraph(cpu(), act, in));
    CHECK(std::equal(rowMajor.elements<float>().begin(), rowMajor.elements<float>().end(),
                     expected.elements<float>().begin()));
  }
}

TEST_CASE("batchnorm, concat and split on channels-last views equal the row-major results",
          "[cpu][kernel][layout]") {
  // DenseNet's concatenations and the normalizations after them.
  auto channelsLast = [](const Shape& s) {
    return cpu()
        .allocate(DType::Float32, ZRange::fromShape(ZPoint(s)), 0)
        .withStrides(channelsLastStrides(s));
  };
  auto toRowMajor = [](const Buffer& b) {
    Buffer out = Buffer::host(DType::Float32, b.region().shape().vector());
    cpu().copyRegion(b.view(), out.view(), b.region());
    return out;
  };
  auto same = [](const Buffer& a, const Buffer& b) {
    return std::equal(a.elements<float>().begin(), a.elements<float>().end(),
                      b.elements<float>().begin(), b.elements<float>().end());
  };
  // Small at one kernel thread; 73920 elements (64 Ki or more: the positions
  // shared over the team) at two. Each in two shards that split the channels.
  cpu(); // made first: making it sets one thread
  for (const auto& [shape, threads] :
       {std::pair{Shape{2, 24, 5, 6}, 1}, std::pair{Shape{2, 32, 33, 35}, 2}}) {
    INFO(threads << " threads");
    CpuBackend::setBlasThreads(threads);
    const std::vector<std::int64_t> c{shape[1]};
    const graph::ExpandedGraph bn = oneOp("batchnorm",
                                          {{"x", "float32", shape},
                                           {"s", "float32", c},
                                           {"b", "float32", c},
                                           {"m", "float32", c},
                                           {"v", "float32", c}},
                                          R"({"input": "x", "scale": "s", "bias": "b", "mean": "m",
                                            "var": "v"})");
    TensorBuffers in = drawInputs(bn, 5);
    for (float& v : in.at("v").elements<float>()) {
      v = std::abs(v) + 0.5f;
    }
    const Buffer want = evaluateGraph(cpu(), bn, in).at(bn.tensors[bn.outputs[0]].name);
    Buffer x = channelsLast(shape);
    cpu().copyRegion(in.at("x").view(), x.view(), x.region());
    Buffer y = channelsLast(shape);
    const std::vector<PortViews> bnIn{{x.view()},
                                      {in.at("s").view()},
                                      {in.at("b").view()},
                                      {in.at("m").view()},
                                      {in.at("v").view()}};
    const std::vector<PortViews> bnOut{{y.view()}};
    for (const ZRange& shard : {ZRange({0, 0, 0, 0}, {shape[0], 9, shape[2], shape[3]}),
                                ZRange({0, 9, 0, 0}, {shape[0], shape[1], shape[2], shape[3]})}) {
      cpu().runKernel(bn.operations[0], shard, bnIn, bnOut);
    }
    CHECK(same(toRowMajor(y), want));
  }
  CpuBackend::setBlasThreads(1);

  // concat of three images along the channels, and split back.
  const Shape a{2, 8, 5, 6}, b{2, 16, 5, 6}, d{2, 1, 5, 6};
  const graph::ExpandedGraph cat =
      oneOp("concat", {{"a", "float32", a}, {"b", "float32", b}, {"d", "float32", d}},
            R"({"tensors": ["a", "b", "d"]})", R"({"axis": 1})");
  const TensorBuffers parts = drawInputs(cat, 6);
  const Buffer joined = evaluateGraph(cpu(), cat, parts).at(cat.tensors[cat.outputs[0]].name);
  PortViews catIn;
  std::vector<Buffer> lastParts;
  for (const char* name : {"a", "b", "d"}) {
    lastParts.push_back(channelsLast(parts.at(name).region().shape().vector()));
    cpu().copyRegion(parts.at(name).view(), lastParts.back().view(), lastParts.back().region());
  }
  for (const Buffer& part : lastParts) {
    catIn.push_back(part.view());
  }
  const Shape all{2, 25, 5, 6};
  Buffer z = channelsLast(all);
  const std::vector<PortViews> catIns{catIn}, catOut{{z.view()}};
  cpu().runKernel(cat.operations[0], cat.operations[0].application.index, catIns, catOut);
  CHECK(same(toRowMajor(z), joined));

  const graph::ExpandedGraph split =
      oneOp("split", {{"z", "float32", all}}, R"({"input": "z"})",
            R"({"axis": 1, "sections": [8, 16, 1]})", R"({"results": ["a", "b", "d"]})");
  std::vector<Buffer> back{channelsLast(a), channelsLast(b), channelsLast(d)};
  const std::vector<PortViews> splitIn{{z.view()}},
      splitOut{{back[0].view(), back[1].view(), back[2].view()}};
  cpu().runKernel(split.operations[0], split.operations[0].application.index, splitIn, splitOut);
  CHECK(same(toRowMajor(back[0]), parts.at("a")));
  CHECK(same(toRowMajor(back[1]), parts.at("b")));
  CHECK(same(toRowMajor(back[2]), parts.at("d")));
}

TEST_CASE("combine joins partials with each monoid, fillIdentity starts them", "[cpu][combine]") {
  const ZRange r = ZRange::fromShape({4});
  for (const std::string& dt : kAll) {
    const DType dtype = parseDType(dt);
    INFO(dt);
    Buffer a = randomBuffer(dtype, {4}, 1, -3, 3);
    Buffer b = randomBuffer(dtype, {4}, 2, -3, 3);
    const std::vector<double> va = values(a);
    const std::vector<double> vb = values(b);
    for (metakernel::Combine kind : {metakernel::Combine::Sum, metakernel::Combine::Max,
                                     metakernel::Combine::Min, metakernel::Combine::Prod}) {
      Buffer acc = Buffer::host(dtype, {4});
      cpu().fillIdentity(kind, acc.view());
      cpu().combine(kind, acc.view(), a.view(), r);
      CHECK(values(acc) == va); // identity ⊕ a == a
      cpu().combine(kind, acc.view(), b.view(), r);
      std::vector<double> want(4);
      for (std::size_t i = 0; i < 4; ++i) {
        switch (kind) {
        case metakernel::Combine::Sum:
          want[i] = va[i] + vb[i];
          break;
        case metakernel::Combine::Max:
          want[i] = std::max(va[i], vb[i]);
          break;
        case metakernel::Combine::Min:
          want[i] = std::min(va[i], vb[i]);
          break;
        case metakernel::Combine::Prod:
          want[i] = va[i] * vb[i];
          break;
        }
      }
      CHECK(relError(values(acc), want) <= tolerance(dtype));
    }
  }
  // max propagates NaN
  Buffer x = Buffer::host(DType::Float32, {2});
  Buffer y = Buffer::host(DType::Float32, {2});
  x.elements<float>()[0] = NAN;
  y.elements<float>()[1] = NAN;
  cpu().combine(metakernel::Combine::Max, x.view(), y.view(), ZRange::fromShape({2}));
  CHECK(std::isnan(x.elements<float>()[0]));
  CHECK(std::isnan(x.elements<float>()[1]));
}

// ---------------------------------------------------------------- kernels

TEST_CASE("the cpu backend has every standard-library kernel", "[cpu]") {
  std::vector<std::string> names = cpu().kernelNames();
  // argmax and argmin have no native kernel: they run from their bodies (in
  // float64, then cast to int64), on every backend.
  const std::set<std::string> fromBody = {"argmax", "argmin"};
  for (const metakernel::Metakernel* k : lib().kernels()) {
    INFO(k->name);
    CHECK(cpu().hasKernel(k->name) != (fromBody.count(k->name) == 1));
  }
  CHECK(names.size() == 102);
  CHECK(cpu().name() == "cpu");
  CHECK(cpu().deviceCount() == 4);
}

TEST_CASE("elementwise unary kernels", "[cpu][kernel]") {
  for (const char* k : {"relu", "gelu", "gelu_tanh", "tanh", "exp", "sigmoid", "silu", "neg"}) {
    const bool ints = std::string(k) == "relu" || std::string(k) == "neg";
    for (const std::string& dt : ints ? kAll : kFloats) {
      for (const Shape& s : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}}) {
        INFO(k << " " << dt << " " << shapeJson(s));
        checkKernel(oneOp(k, {{"x", dt, s}}, R"({"input": "x"})"));
      }
    }
  }
}

TEST_CASE("long float32 elementwise loops on the kernel threads' team: the same numbers",
          "[cpu][kernel][large]") {
  // 150000 elements in one contiguous run (64 Ki or more: the team's share,
  // so also on halves), at two kernel threads, whole and on shards, against
  // the reference.
  cpu(); // made first: making it sets one thread
  CpuBackend::setBlasThreads(2);
  for (const char* k : {"relu", "tanh", "gelu", "gelu_tanh", "silu"}) {
    INFO(k);
    checkKernel(oneOp(k, {{"x", "float32", {600, 250}}}, R"({"input": "x"})"));
  }
  checkKernel(oneOp("add", {{"a", "float32", {600, 250}}, {"b", "float32", {600, 250}}},
                    R"({"A": "a", "B": "b"})"),
              2);
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("float32 gelu, gelu_tanh and tanh of 16 Ki elements or more on oneDNN: special values",
          "[cpu][kernel]") {
  // One dense run of 16384 elements (kDnnlEltwiseFrom: oneDNN's eltwise,
  // eltwise_dnnl.hpp), at one kernel thread and at two: NaN stays NaN, the
  // infinities and huge values saturate as the float64 formulas do (gelu of
  // -inf is NaN there too: -inf times 0), subnormals pass through, and the
  // rest agrees with float64 to float32's precision. The random shards of
  // the tests above check the same kernels against their bodies.
  cpu();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special = {0.0f,  -0.0f,  1.0f,    -1.0f,   inf,     -inf,
                                      nan,   1e30f,  -1e30f,  20.0f,   -20.0f,  8.0f,
                                      -8.0f, 1e-40f, -1e-40f, 3.4e38f, -3.4e38f};
  for (const int threads : {1, 2}) {
    CpuBackend::setBlasThreads(threads);
    for (const std::string k : {"gelu", "gelu_tanh", "tanh"}) {
      INFO(k << ", " << threads << " threads");
      const graph::ExpandedGraph g = oneOp(k, {{"x", "float32", {16, 1024}}}, R"({"input": "x"})");
      const graph::Operation& op = g.operations[0];
      Buffer x = randomBuffer(DType::Float32, {16, 1024}, 3, -6, 6);
      auto* xs = reinterpret_cast<float*>(x.data());
      std::copy(special.begin(), special.end(), xs);
      const Buffer y = Buffer::host(DType::Float32, {16, 1024});
      const std::vector<PortViews> ins = {{x.view()}};
      const std::vector<PortViews> outs = {{y.view()}};
      const KernelCall call{op, op.application.index, ins, outs, 0};
      std::unique_ptr<PreparedKernel> prepared = cpu().prepareKernel(call);
      REQUIRE(prepared != nullptr);
      prepared->run(call);
      const auto* ys = reinterpret_cast<const float*>(y.data());
      for (std::size_t i = 0; i < 16 * 1024; ++i) {
        const double v = xs[i];
        const double want = applyUnary(k, v);
        const double got = ys[i];
        INFO("x = " << v << ": got " << got << ", want " << want);
        if (std::isnan(want) || std::isinf(want)) {
          CHECK(((std::isnan(want) && std::isnan(got)) || got == want));
        } else {
          CHECK(std::abs(got - want) <= 1e-6 * std::max(1.0, std::abs(want)));
        }
      }
    }
  }
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("memory-bound loops of many runs or rows on the kernel threads' team: the same numbers",
          "[cpu][kernel][large]") {
  // 216000 elements or more (64 Ki: the team's share, so also on thirds) in
  // many runs (a
  // broadcast operand, a strided view, a transpose's tiles) or many rows, at
  // two kernel threads, whole and on shards in every view mode, against the
  // reference.
  // At this CPU's own ISA level only: the split does not depend on it, and
  // every level took 296 s under the sanitizers.
  auto check = [](const graph::ExpandedGraph& g, std::uint64_t seed = 1) {
    checkKernelOnce(g, makeInputs(g, seed, {}), {});
  };
  cpu(); // made first: making it sets one thread
  CpuBackend::setBlasThreads(2);
  check(oneOp("add", {{"a", "float32", {240, 30, 30}}, {"b", "float32", {30, 30}}},
              R"({"A": "a", "B": "b"})"),
        2);
  check(oneOp("mul", {{"a", "float32", {240, 30, 30}}, {"b", "float32", {240, 1, 30}}},
              R"({"A": "a", "B": "b"})"),
        3);
  check(oneOp("tanh", {{"x", "float32", {240, 30, 30}}}, R"({"input": "x"})"));
  check(oneOp("softmax", {{"x", "float32", {1024, 256}}}, R"({"input": "x"})"));
  check(oneOp("softmax", {{"x", "float32", {256, 1024}}}, R"({"input": "x"})", R"({"axis": 0})"));
  check(oneOp("layernorm",
              {{"x", "float32", {1024, 256}}, {"g", "float32", {256}}, {"b", "float32", {256}}},
              R"({"input": "x", "gamma": "g", "beta": "b"})", R"({"eps": 1e-5})"));
  check(oneOp("rmsnorm", {{"x", "float32", {1024, 256}}, {"g", "float32", {256}}},
              R"({"input": "x", "gamma": "g"})", R"({"eps": 1e-5})"));
  // The rotary embedding's rows, its cos and sin tables broadcast over batch
  // and heads.
  check(oneOp("rope",
              {{"x", "float32", {2, 4, 128, 64}},
               {"c", "float32", {1, 1, 128, 64}},
               {"s", "float32", {1, 1, 128, 64}}},
              R"({"X": "x", "cos": "c", "sin": "s"})"));
  for (const char* perm : {"[2, 0, 1]", "[0, 2, 1]", "[1, 0, 2]"}) {
    INFO("transpose " << perm);
    check(oneOp("transpose", {{"x", "float32", {240, 30, 30}}}, R"({"input": "x"})",
                std::string(R"({"perm": )") + perm + "}"));
  }
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("attention on the kernel threads' team: runs of query rows as one-thread oneDNN "
          "products, against the body",
          "[cpu][kernel]") {
  // 4 * b * heads * s * t * d = 4 * 2 * 4 * 64 * 64 * 32 = 4.2 MFLOP, from
  // which the runs of query rows go on the team at two kernel threads: the
  // native kernel whole (the reference) against the body and the native
  // kernel on shards in every view mode.
  cpu(); // made first: making it sets one thread
  CpuBackend::setBlasThreads(2);
  const graph::ExpandedGraph qkv =
      oneOp("attention_heads_qkv_masked",
            {{"x", "float32", {2, 64, 384}}, {"m", "bool", {64, 64}}, {"f", "float32", {}}},
            R"({"Q": "x", "K": "x", "V": "x", "mask": "m", "fill": "f"})",
            R"({"heads": 4, "divisor": 5.0})");
  const graph::ExpandedGraph plain =
      oneOp("attention",
            {{"q", "float32", {2, 4, 64, 32}},
             {"k", "float32", {2, 4, 32, 64}},
             {"v", "float32", {2, 4, 64, 32}}},
            R"({"Q": "q", "K": "k", "V": "v"})", R"({"divisor": 5.0})");
  // Sequence-first: the rows of a head are b*heads*d apart.
  const graph::ExpandedGraph seqFirst =
      oneOp("attention_heads_qkv_seq_first", {{"x", "float32", {64, 2, 384}}},
            R"({"Q": "x", "K": "x", "V": "x"})", R"({"heads": 4, "divisor": 5.0})");
  for (const graph::ExpandedGraph* g : {&qkv, &plain, &seqFirst}) {
    INFO(g->operations[0].kernel);
    checkShards(*g, makeInputs(*g, 1, {}));
  }
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("attention reads keys as rows (transpose_k) and K and V broadcast over query heads",
          "[cpu][kernel]") {
  // Grouped-query attention: 2 K and V heads for 6 query heads, K stored
  // [..., t, d]; whole against shards and the body, every split in every view
  // mode. The larger one runs its query rows as oneDNN products on the team.
  for (const char* dtype : {"float32", "float64"}) {
    const graph::ExpandedGraph small = oneOp("attention",
                                             {{"q", dtype, {2, 2, 3, 5, 4}},
                                              {"k", dtype, {2, 2, 1, 7, 4}},
                                              {"v", dtype, {2, 1, 7, 3}},
                                              {"m", dtype, {5, 7}}},
                                             R"({"Q": "q", "K": "k", "V": "v", "bias": "m"})",
                                             R"({"divisor": 2.0, "transpose_k": true})");
    INFO(dtype);
    checkShards(small, makeInputs(small, 3, {}));
  }
  cpu();
  CpuBackend::setBlasThreads(2);
  const graph::ExpandedGraph large =
      oneOp("attention",
            {{"q", "float32", {1, 2, 4, 128, 64}},
             {"k", "float32", {1, 2, 1, 128, 64}},
             {"v", "float32", {1, 2, 1, 128, 64}}},
            R"({"Q": "q", "K": "k", "V": "v"})", R"({"divisor": 8.0, "transpose_k": true})");
  checkShards(large, makeInputs(large, 4, {}));
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("attention_heads_seq_first and its packed form read [s, b, heads*d] in place",
          "[cpu][kernel]") {
  // The native kernel whole (the reference) against itself on shards and
  // against the body on shards, every split in every view mode, float32 at
  // every ISA level and float64. (`rewrites check` compares both kernels with
  // the exported chain of reshapes, transposes and products they replace.)
  for (const char* dtype : {"float32", "float64"}) {
    const graph::ExpandedGraph apart =
        oneOp("attention_heads_seq_first",
              {{"q", dtype, {5, 3, 12}}, {"k", dtype, {7, 3, 12}}, {"v", dtype, {7, 3, 6}}},
              R"({"Q": "q", "K": "k", "V": "v"})", R"({"heads": 3, "divisor": 2.0})");
    const graph::ExpandedGraph packed =
        oneOp("attention_heads_qkv_seq_first", {{"x", dtype, {6, 2, 24}}},
              R"({"Q": "x", "K": "x", "V": "x"})", R"({"heads": 2, "divisor": 3.0})");
    const int levels = std::string(dtype) == "float32" ? static_cast<int>(detectedIsa()) : 0;
    for (int level = 0; level <= levels; ++level) {
      setCpuIsa(static_cast<CpuIsa>(level));
      for (const graph::ExpandedGraph* g : {&apart, &packed}) {
        INFO(g->operations[0].kernel << " " << dtype << " ISA level " << level);
        checkShards(*g, makeInputs(*g, 2, {}));
      }
    }
    setCpuIsa(std::nullopt);
  }
}

TEST_CASE("attention and its heads forms add their optional bias [s, t] to the scores",
          "[cpu][kernel]") {
  // The native kernel whole against itself and the body on shards (the body
  // adds `bias`, 0 where it is left out), float32 at every ISA level and
  // float64, on the row and BLAS paths; then the team's oneDNN path.
  for (const char* dtype : {"float32", "float64"}) {
    // Q, K and V apart, and the bias m.
    auto apart = [&](const char* kernel, Shape q, Shape k, Shape v, Shape m, const char* params) {
      return oneOp(kernel, {{"q", dtype, q}, {"k", dtype, k}, {"v", dtype, v}, {"m", dtype, m}},
                   R"({"Q": "q", "K": "k", "V": "v", "bias": "m"})", params);
    };
    std::vector<graph::ExpandedGraph> graphs;
    graphs.push_back(
        apart("attention", {2, 5, 4}, {2, 4, 6}, {2, 6, 3}, {5, 6}, R"({"divisor": 2.0})"));
    graphs.push_back(
        apart("attention_heads", {2, 5, 12}, {2, 7, 12}, {2, 7, 6}, {5, 7}, R"({"heads": 3})"));
    graphs.push_back(oneOp("attention_heads_qkv", {{"x", dtype, {2, 6, 24}}, {"m", dtype, {6, 6}}},
                           R"({"Q": "x", "K": "x", "V": "x", "bias": "m"})", R"({"heads": 2})"));
    graphs.push_back(apart("attention_heads_seq_first", {5, 3, 12}, {7, 3, 12}, {7, 3, 6}, {5, 7},
                           R"({"heads": 3, "divisor": 2.0})"));
    graphs.push_back(
        oneOp("attention_heads_qkv_seq_first", {{"x", dtype, {6, 2, 24}}, {"m", dtype, {6, 6}}},
              R"({"Q": "x", "K": "x", "V": "x", "bias": "m"})", R"({"heads": 2, "divisor": 3.0})"));
    const int levels = std::string(dtype) == "float32" ? static_cast<int>(detectedIsa()) : 0;
    for (int level = 0; level <= levels; ++level) {
      setCpuIsa(static_cast<CpuIsa>(level));
      for (const graph::ExpandedGraph& g : graphs) {
        INFO(g.operations[0].kernel << " " << dtype << " ISA level " << level);
        checkShards(g, makeInputs(g, 3, {}));
      }
    }
    setCpuIsa(std::nullopt);
  }
  cpu(); // made first: making it sets one thread
  CpuBackend::setBlasThreads(2);
  const graph::ExpandedGraph team = oneOp(
      "attention_heads_qkv_seq_first", {{"x", "float32", {64, 2, 384}}, {"m", "float32", {64, 64}}},
      R"({"Q": "x", "K": "x", "V": "x", "bias": "m"})", R"({"heads": 4, "divisor": 5.0})");
  checkShards(team, makeInputs(team, 1, {}));
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("attention on scores that spread past float's normal range: subnormal "
          "probabilities are flushed, and the caller's MXCSR is restored",
          "[cpu][kernel]") {
  // Q and K in [-40, 40): the scores of a row spread by thousands, so most
  // probabilities underflow (the kernel flushes subnormals while it runs).
  // The native kernel whole against its body and itself on every split, on
  // the row path and the team's oneDNN path.
  cpu(); // made first: making it sets one thread
  CpuBackend::setBlasThreads(2);
  for (const Shape& x : {Shape{6, 2, 24}, Shape{64, 2, 384}}) {
    const graph::ExpandedGraph g =
        oneOp("attention_heads_qkv_seq_first", {{"x", "float32", x}},
              R"({"Q": "x", "K": "x", "V": "x"})", R"({"heads": 2, "divisor": 1.0})");
    INFO("x " << x[0] << " x " << x[1] << " x " << x[2]);
    checkShards(g, makeInputs(g, 1, {{"x", randomBuffer(DType::Float32, x, 7, -40, 40)}}));
  }
  CpuBackend::setBlasThreads(1);
#if defined(__SSE2__)
  const unsigned before = _mm_getcsr();
  const graph::ExpandedGraph small =
      oneOp("attention_heads_qkv_seq_first", {{"x", "float32", {6, 2, 24}}},
            R"({"Q": "x", "K": "x", "V": "x"})", R"({"heads": 2})");
  checkShards(small, makeInputs(small, 2, {}));
  CHECK(_mm_getcsr() == before); // FTZ and DAZ are the kernel's, not the caller's
#endif
}

TEST_CASE("elementwise binary kernels broadcast like NumPy", "[cpu][kernel]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 6}, {4, 6}}, {{8, 1, 5}, {3, 1}}, {{5}, {2, 3, 5}}, {{2, 1}, {1, 3}}, {{1}, {4}}};
  for (const char* k : {"add", "sub", "mul", "div"}) {
    const bool ints = std::string(k) != "div";
    for (const std::string& dt : ints ? kAll : kFloats) {
      for (const auto& [a, b] : shapes) {
        INFO(k << " " << dt << " " << shapeJson(a) << " " << shapeJson(b));
        std::map<std::string, Buffer> overrides;
        if (std::string(k) == "div") { // keep divisors away from zero
          overrides["b"] = randomBuffer(parseDType(dt), b, 7, 0.5, 1.5);
        }
        checkKernel(oneOp(k, {{"a", dt, a}, {"b", dt, b}}, R"({"A": "a", "B": "b"})"), 2,
                    overrides);
      }
    }
  }
}

TEST_CASE("where picks X or Y by a bool condition, all three broadcast like NumPy",
          "[cpu][kernel]") {
  const std::vector<std::tuple<Shape, Shape, Shape>> shapes = {{{4, 6}, {4, 6}, {4, 6}},
                                                               {{8, 1, 1}, {3, 1}, {5}},
                                                               {{1, 5}, {2, 3, 5}, {1}},
                                                               {{2, 1}, {1, 3}, {2, 3}},
                                                               {{6}, {1}, {1}}};
  for (const std::string& dt : kAll) {
    for (const auto& [c, x, y] : shapes) {
      INFO("where " << dt << " " << shapeJson(c) << " " << shapeJson(x) << " " << shapeJson(y));
      checkKernel(oneOp("where", {{"c", "bool", c}, {"x", dt, x}, {"y", dt, y}},
                        R"({"condition": "c", "X": "x", "Y": "y"})"),
                  4);
    }
  }
  // A condition read on a strided view (a region of a larger buffer).
  const graph::ExpandedGraph g =
      oneOp("where", {{"c", "bool", {3, 4}}, {"x", "float32", {3, 4}}, {"y", "float32", {1}}},
            R"({"condition": "c", "X": "x", "Y": "y"})");
  Buffer big = Buffer::host(DType::Bool, {5, 6});
  for (std::int64_t i = 0; i < 30; ++i) {
    big.elements<Bool>()[static_cast<std::size_t>(i)] = Bool{static_cast<std::uint8_t>(i % 3 == 0)};
  }
  Buffer x = randomBuffer(DType::Float32, {3, 4}, 1);
  Buffer y = Buffer::host(DType::Float32, {1});
  y.elements<float>()[0] = -7;
  Buffer out = Buffer::host(DType::Float32, {3, 4});
  TensorView c = big.view(); // rows 1..3, columns 2..5 of big, as the tensor [3, 4]
  c.data += 1 * 6 + 2;
  c.region = ZRange::fromShape({3, 4});
  runUnsharded(cpu(), g.operations[0], std::vector<PortViews>{{c}, {x.view()}, {y.view()}},
               std::vector<PortViews>{{out.view()}});
  for (std::int64_t i = 0; i < 3; ++i) {
    for (std::int64_t j = 0; j < 4; ++j) {
      const std::size_t at = static_cast<std::size_t>(i * 4 + j);
      const bool pick = ((i + 1) * 6 + j + 2) % 3 == 0;
      CHECK(out.elements<float>()[at] == (pick ? x.elements<float>()[at] : -7.0f));
    }
  }
}

TEST_CASE("ONNX unary kernels: erf, sqrt, reciprocal, log, abs", "[cpu][kernel]") {
  for (const char* k : {"erf", "sqrt", "reciprocal", "log", "abs"}) {
    const bool ints = std::string(k) == "abs";
    // sqrt, log and reciprocal read positive inputs (away from 0), the others [-2, 2).
    const bool positive = !ints && std::string(k) != "erf";
    for (const std::string& dt : ints ? kAll : kFloats) {
      for (const Shape& s : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}}) {
        INFO(k << " " << dt << " " << shapeJson(s));
        std::map<std::string, Buffer> overrides;
        overrides["x"] = randomBuffer(parseDType(dt), s, 5, positive ? 0.25 : -2, 2);
        checkKernel(oneOp(k, {{"x", dt, s}}, R"({"input": "x"})"), 1, overrides);
      }
    }
  }
}

TEST_CASE("clip and the scalar kernels read their float params", "[cpu][kernel]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"clip", R"({"min": 0, "max": 0.5})"},              // ReLU6-like, on [-1, 1)
      {"clip", R"({"max": -0.25})"},                      // min at its default
      {"clip", "{}"},                                     // both defaults: clips nothing
      {"add_scalar", R"({"value": 2.5})"},                //
      {"mul_scalar", R"({"value": -3})"},                 //
      {"rsub_scalar", R"({"value": 1})"},                 //
      {"rdiv_scalar", R"({"value": 2})"},                 // x in [0.25, 2)
      {"div_scalar", R"({"value": 1.4142135623730951})"}, // GELU's sqrt(2)
      {"div_scalar", R"({"value": -8})"},                 //
      {"pow_scalar", R"({"value": 0.5})"},                // sqrt of x in [0.25, 2)
      {"pow_scalar", "{}"},                               // x ** 1
      {"mul_scalar", "{}"},                               // default value 1
  };
  for (const auto& [k, params] : cases) {
    const bool positive = k == "rdiv_scalar" || k == "pow_scalar";
    for (const std::string& dt : kFloats) {
      for (const Shape& s : {Shape{7}, Shape{2, 3, 4}}) {
        INFO(k << " " << params << " " << dt << " " << shapeJson(s));
        std::map<std::string, Buffer> overrides;
        overrides["x"] = randomBuffer(parseDType(dt), s, 9, positive ? 0.25 : -1, positive ? 2 : 1);
        checkKernel(oneOp(k, {{"x", dt, s}}, R"({"input": "x"})", params), 3, overrides);
      }
    }
  }
}

TEST_CASE("pow broadcasts like NumPy", "[cpu][kernel]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 6}, {4, 6}}, {{8, 1, 5}, {3, 1}}, {{5}, {2, 3, 5}}, {{1}, {4}}};
  for (const std::string& dt : kFloats) {
    for (const auto& [a, b] : shapes) {
      INFO("pow " << dt << " " << shapeJson(a) << " " << shapeJson(b));
      std::map<std::string, Buffer> overrides; // positive bases, exponents in [-2, 2)
      overrides["a"] = randomBuffer(parseDType(dt), a, 11, 0.25, 2);
      overrides["b"] = randomBuffer(parseDType(dt), b, 12, -2, 2);
      checkKernel(oneOp("pow", {{"a", dt, a}, {"b", dt, b}}, R"({"A": "a", "B": "b"})"), 2,
                  overrides);
    }
  }
}

// ---------------------------------------------------------------- issue 34's elementwise kernels

TEST_CASE("unary math and activations: naive, native and body on random shards",
          "[cpu][kernel][issue34]") {
  struct Case {
    const char* kernel;
    double lo, hi; // the input's range, where the function is finite
    const char* params;
  };
  const std::vector<Case> cases = {
      {"floor", -3, 3, "{}"},
      {"ceil", -3, 3, "{}"},
      {"round", -3, 3, "{}"},
      {"sin", -3, 3, "{}"},
      {"cos", -3, 3, "{}"},
      {"tan", -1.2, 1.2, "{}"},
      {"asin", -0.99, 0.99, "{}"},
      {"acos", -0.99, 0.99, "{}"},
      {"atan", -3, 3, "{}"},
      {"sinh", -3, 3, "{}"},
      {"cosh", -3, 3, "{}"},
      {"asinh", -3, 3, "{}"},
      {"acosh", 1.01, 4, "{}"},
      {"atanh", -0.95, 0.95, "{}"},
      {"softplus", -5, 5, "{}"},
      {"softsign", -3, 3, "{}"},
      {"sign", -3, 3, "{}"},
      {"leaky_relu", -2, 2, R"({"alpha": 0.1})"},
      {"leaky_relu", -2, 2, "{}"},
      {"elu", -2, 2, R"({"alpha": 0.5})"},
      {"selu", -2, 2, "{}"},
      {"celu", -2, 2, R"({"alpha": 2})"},
      {"thresholded_relu", -2, 2, R"({"alpha": 0.25})"},
      {"hard_sigmoid", -6, 6, R"({"alpha": 0.25, "beta": 0.25})"},
      {"hard_sigmoid", -6, 6, "{}"},
      {"hard_swish", -5, 5, "{}"},
  };
  for (const Case& c : cases) {
    const bool ints = std::string(c.kernel) == "sign";
    for (const std::string& dt : ints ? kAll : kFloats) {
      for (const Shape& s : {Shape{7}, Shape{2, 3, 4}}) {
        INFO(c.kernel << " " << c.params << " " << dt << " " << shapeJson(s));
        std::map<std::string, Buffer> overrides;
        overrides["x"] = randomBuffer(parseDType(dt), s, 21, c.lo, c.hi);
        checkKernel(oneOp(c.kernel, {{"x", dt, s}}, R"({"input": "x"})", c.params), 4, overrides);
      }
    }
  }
}

TEST_CASE("isnan, isinf and logical_not give bool tensors", "[cpu][kernel][issue34]") {
  for (const std::string& dt : kFloats) {
    for (const char* k : {"isnan", "isinf"}) {
      INFO(k << " " << dt);
      std::map<std::string, Buffer> overrides;
      overrides["x"] = randomBuffer(parseDType(dt), {3, 8}, 22, -2, 2);
      const double specials[] = {std::nan(""), INFINITY, -INFINITY, 0.0};
      for (std::size_t i = 0; i < 24; i += 3) {
        storeDouble(parseDType(dt), overrides["x"].data() + i * dtypeSize(parseDType(dt)),
                    specials[i % 4]);
      }
      const graph::ExpandedGraph g = oneOp(k, {{"x", dt, {3, 8}}}, R"({"input": "x"})");
      CHECK(g.operations[0].application.outputs[0].tensors[0].dtype == "bool");
      checkKernel(g, 5, overrides);
      const std::vector<double> got = values(runWhole(g, makeInputs(g, 5, overrides))[0]);
      const std::vector<double> in = values(overrides["x"]);
      for (std::size_t i = 0; i < in.size(); ++i) {
        CHECK(got[i] == (std::string(k) == "isnan" ? std::isnan(in[i]) : std::isinf(in[i])));
      }
    }
  }
  std::map<std::string, Buffer> overrides;
  overrides["x"] = randomBuffer(DType::Bool, {4, 5}, 23, 0, 1);
  checkKernel(oneOp("logical_not", {{"x", "bool", {4, 5}}}, R"({"input": "x"})"), 6, overrides);
}

TEST_CASE("maximum, minimum, mod, fmod and prelu broadcast like NumPy", "[cpu][kernel][issue34]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 6}, {4, 6}}, {{8, 1, 5}, {3, 1}}, {{5}, {2, 3, 5}}, {{1}, {4}}};
  for (const char* k : {"maximum", "minimum"}) {
    for (const std::string& dt : kAll) {
      for (const auto& [a, b] : shapes) {
        INFO(k << " " << dt << " " << shapeJson(a) << " " << shapeJson(b));
        checkKernel(oneOp(k, {{"a", dt, a}, {"b", dt, b}}, R"({"A": "a", "B": "b"})"), 7);
      }
    }
  }
  // Divisors away from 0, of both signs; dividends of both signs.
  for (const char* k : {"mod", "fmod"}) {
    for (const std::string& dt : kAll) {
      const bool ints = dt == "int32" || dt == "int64";
      for (const double sign : {1.0, -1.0}) {
        for (const auto& [a, b] : shapes) {
          INFO(k << " " << dt << " divisor sign " << sign << " " << shapeJson(a) << " "
                 << shapeJson(b));
          std::map<std::string, Buffer> overrides;
          overrides["a"] = randomBuffer(parseDType(dt), a, 8, ints ? -9 : -5, ints ? 9 : 5);
          overrides["b"] =
              randomBuffer(parseDType(dt), b, 9, sign * (ints ? 1 : 0.5), sign * (ints ? 4 : 2));
          checkKernel(oneOp(k, {{"a", dt, a}, {"b", dt, b}}, R"({"A": "a", "B": "b"})"), 8,
                      overrides);
        }
      }
    }
  }
  for (const std::string& dt : kFloats) {
    for (const auto& [x, slope] : std::vector<std::pair<Shape, Shape>>{
             {{2, 3, 4}, {3, 1}}, {{2, 3, 4}, {4}}, {{5}, {1}}, {{3, 4}, {3, 4}}}) {
      INFO("prelu " << dt << " " << shapeJson(x) << " " << shapeJson(slope));
      checkKernel(oneOp("prelu", {{"x", dt, x}, {"s", dt, slope}}, R"({"X": "x", "slope": "s"})"),
                  9);
    }
  }
}

TEST_CASE("comparisons and logic give bool tensors, broadcasting like NumPy",
          "[cpu][kernel][issue34]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 6}, {4, 6}}, {{8, 1, 5}, {3, 1}}, {{5}, {2, 3, 5}}};
  for (const char* k : {"equal", "less", "less_equal", "greater", "greater_equal"}) {
    std::vector<std::string> dtypes = kAll;
    if (std::string(k) == "equal") {
      dtypes.push_back("bool");
    }
    for (const std::string& dt : dtypes) {
      for (const auto& [a, b] : shapes) {
        INFO(k << " " << dt << " " << shapeJson(a) << " " << shapeJson(b));
        // Few distinct values, so that ties (== and the <= / >= edges) happen.
        std::map<std::string, Buffer> overrides;
        const bool isBool = dt == "bool";
        overrides["a"] = randomBuffer(parseDType(dt), a, 10, isBool ? 0 : -2, isBool ? 1 : 2);
        overrides["b"] = randomBuffer(parseDType(dt), b, 11, isBool ? 0 : -2, isBool ? 1 : 2);
        if (isFloat(parseDType(dt))) { // round to integers: ties
          for (auto* t : {&overrides["a"], &overrides["b"]}) {
            const std::vector<double> v = values(*t);
            for (std::size_t i = 0; i < v.size(); ++i) {
              storeDouble(parseDType(dt), t->data() + i * dtypeSize(parseDType(dt)),
                          std::round(v[i]));
            }
          }
        }
        const graph::ExpandedGraph g =
            oneOp(k, {{"a", dt, a}, {"b", dt, b}}, R"({"A": "a", "B": "b"})");
        CHECK(g.operations[0].application.outputs[0].tensors[0].dtype == "bool");
        checkKernel(g, 12, overrides);
      }
    }
  }
  for (const char* k : {"logical_and", "logical_or", "logical_xor"}) {
    for (const auto& [a, b] : shapes) {
      INFO(k << " " << shapeJson(a) << " " << shapeJson(b));
      std::map<std::string, Buffer> overrides;
      overrides["a"] = randomBuffer(DType::Bool, a, 13, 0, 1);
      overrides["b"] = randomBuffer(DType::Bool, b, 14, 0, 1);
      checkKernel(oneOp(k, {{"a", "bool", a}, {"b", "bool", b}}, R"({"A": "a", "B": "b"})"), 15,
                  overrides);
    }
  }
}

TEST_CASE("matmul: batched, every dtype, k split into partial sums", "[cpu][kernel]") {
  for (const std::string& dt : kAll) {
    INFO(dt);
    checkKernel(oneOp("matmul", {{"x", dt, {5, 7}}, {"w", dt, {7, 6}}}, R"({"X": "x", "W": "w"})"));
    checkKernel(oneOp("matmul", {{"x", dt, {2, 3, 4, 5}}, {"w", dt, {2, 3, 5, 3}}},
                      R"({"X": "x", "W": "w"})"));
  }
  // Broadcast batch dims: x[B, S, D] @ w[D, F], [1, H, S, D] @ [B, H, D, S],
  // an operand with both fewer dims and a size-1 one, and a 2-D X. Where W is
  // one matrix for the shard and the views allow, the rows merge into one
  // product (planProduct): [4, 1, 6] @ [6, 5] is one product of 4 rows.
  const std::vector<std::pair<Shape, Shape>> broadcast = {
      {{2, 3, 4}, {4, 5}}, {{1, 2, 3, 4}, {3, 2, 4, 3}}, {{3, 2, 4}, {2, 1, 4, 5}},
      {{3, 4}, {2, 4, 5}}, {{4, 1, 6}, {6, 5}},          {{2, 1, 3, 4}, {1, 4, 2}}};
  for (const std::string& dt :
       {std::string("float32"), std::string("float16"), std::string("int64")}) {
    for (const auto& [x, w] : broadcast) {
      INFO(dt << " " << shapeJson(x) << " @ " << shapeJson(w));
      checkKernel(oneOp("matmul", {{"x", dt, x}, {"w", dt, w}}, R"({"X": "x", "W": "w"})"));
    }
  }
  // Degenerate rows and columns (gemv-like shapes) through cblas.
  checkKernel(oneOp("matmul", {{"x", "float32", {1, 9}}, {"w", "float32", {9, 1}}},
                    R"({"X": "x", "W": "w"})"));
  checkKernel(oneOp("matmul", {{"x", "float64", {6, 1}}, {"w", "float64", {1, 4}}},
                    R"({"X": "x", "W": "w"})"));
}

namespace {

// planProduct of one shard of a one-operation graph, every input a whole dense tensor.
ProductPlan planOf(const graph::ExpandedGraph& g, const ZRange& shard) {
  const graph::Operation& op = g.operations[0];
  std::vector<Buffer> keep;
  std::vector<PortViews> ins;
  for (const auto& port : op.application.inputs) {
    keep.push_back(Buffer::host(parseDType(port.tensors[0].dtype), port.tensors[0].shape));
    ins.push_back({keep.back().view()});
  }
  const auto& out = op.application.outputs[0].tensors[0];
  keep.push_back(Buffer::host(parseDType(out.dtype), out.shape));
  std::vector<PortViews> outs = {{keep.back().view()}};
  return planProduct(KernelCall{op, shard, ins, outs, 0});
}

std::string geometry(const ProductPlan& p) {
  std::string out = p.gemm.toString() + " outer";
  for (const auto& o : p.outer) {
    out += " (" + std::to_string(o[0]) + ", " + std::to_string(o[1]) + ", " + std::to_string(o[2]) +
           ")";
  }
  return out;
}

} // namespace

TEST_CASE("planProduct: a shard's product as one strided gemm and the loops around it",
          "[cpu][kernel][products]") {
  const char* xw = R"({"X": "x", "W": "w"})";
  // W broadcast over the batch: [4, 3, 2, 6] @ [6, 5] is one product of 24 rows.
  const graph::ExpandedGraph b =
      oneOp("matmul", {{"x", "float32", {4, 3, 2, 6}}, {"w", "float32", {6, 5}}}, xw);
  CHECK(geometry(planOf(b, b.operations[0].application.index)) ==
        "1 x [24, 6] @ [6, 5] strides A [6, 1] B [5, 1] C [5, 1] batch strides 0/0/0 outer (0, 0, "
        "0)");
  // One row of m per batch point: rows 12 elements apart in X, 10 in the result.
  CHECK(geometry(planOf(b, ZRange({0, 0, 1, 0, 0}, {4, 3, 2, 5, 6}))) ==
        "1 x [12, 6] @ [6, 5] strides A [12, 1] B [5, 1] C [10, 1] batch strides 0/0/0 outer "
        "(6, 0, 5)");
  // W stored transposed: B [k, n] reads W [n, k] with strides (1, k).
  const graph::ExpandedGraph t =
      oneOp("matmul", {{"x", "float32", {3, 4}}, {"w", "float32", {5, 4}}}, xw,
            R"({"transpose_w": true})");
  CHECK(
      geometry(planOf(t, ZRange({0, 1, 1}, {3, 5, 4}))) ==
      "1 x [3, 3] @ [3, 4] strides A [4, 1] B [1, 4] C [5, 1] batch strides 0/0/0 outer (1, 5, 1)");
  // W moves along one batch dim only: that dim is the gemm's batch, the other an outer loop.
  const graph::ExpandedGraph o =
      oneOp("matmul", {{"x", "float32", {2, 3, 4, 6}}, {"w", "float32", {3, 6, 5}}}, xw);
  CHECK(geometry(planOf(o, o.operations[0].application.index)) ==
        "3 x [4, 6] @ [6, 5] strides A [6, 1] B [5, 1] C [5, 1] batch strides 24/30/20 outer (0, "
        "0, 0) (72, 0, 60)");
  // linear with X stored [b, k, m] and W [n, k]: k strides from the params.
  const graph::ExpandedGraph l = oneOp(
      "linear", {{"x", "float32", {2, 6, 4}}, {"w", "float32", {5, 6}}, {"b", "float32", {5}}},
      R"({"X": "x", "W": "w", "bias": "b"})", R"({"transpose_x": true, "transpose_w": true})");
  CHECK(geometry(planOf(l, ZRange({0, 1, 2}, {2, 4, 5}))) ==
        "2 x [3, 6] @ [6, 3] strides A [1, 4] B [1, 6] C [5, 1] batch strides 24/0/20 + bias "
        "outer (1, 12, 7)");
}

TEST_CASE("matmul on transposed and strided views", "[cpu][kernel]") {
  // A view whose rows are unit-stride (the transpose of a row-major block) and
  // one with no unit stride at all: both must give the dense result.
  graph::ExpandedGraph g = oneOp("matmul", {{"x", "float32", {3, 4}}, {"w", "float32", {4, 2}}},
                                 R"({"X": "x", "W": "w"})");
  Inputs in = makeInputs(g, 3);
  std::vector<Buffer> expected = runWhole(g, in);
  Buffer xt = Buffer::host(DType::Float32, {4, 3});   // x stored transposed
  Buffer wide = Buffer::host(DType::Float32, {8, 4}); // w on every other row, every other column
  for (std::int64_t i = 0; i < 3; ++i) {
    for (std::int64_t k = 0; k < 4; ++k) {
      xt.elements<float>()[static_cast<std::size_t>(k * 3 + i)] =
          in.buffers[0].elements<float>()[static_cast<std::size_t>(i * 4 + k)];
    }
  }
  for (std::int64_t k = 0; k < 4; ++k) {
    for (std::int64_t j = 0; j < 2; ++j) {
      wide.elements<float>()[static_cast<std::size_t>(2 * k * 4 + 2 * j)] =
          in.buffers[1].elements<float>()[static_cast<std::size_t>(k * 2 + j)];
    }
  }
  TensorView xv{xt.data(), DType::Float32, ZRange::fromShape({3, 4}), {1, 3}};
  TensorView wv{wide.data(), DType::Float32, ZRange::fromShape({4, 2}), {8, 2}};
  Buffer out = Buffer::host(DType::Float32, {3, 2});
  std::vector<PortViews> ins = {{xv}, {wv}};
  std::vector<PortViews> outs = {{out.view()}};
  runUnsharded(cpu(), g.operations[0], ins, outs);
  CHECK(relError(values(out), values(expected[0])) <= 1e-6);
}

TEST_CASE("linear: X·W + bias with the whole k per point", "[cpu][kernel]") {
  for (const std::string& dt : kFloats) {
    INFO(dt);
    checkKernel(oneOp("linear", {{"x", dt, {6, 5}}, {"w", dt, {5, 4}}, {"b", dt, {4}}},
                      R"({"X": "x", "W": "w", "bias": "b"})"));
    checkKernel(oneOp("linear", {{"x", dt, {2, 3, 5}}, {"w", dt, {5, 3}}, {"b", dt, {3}}},
                      R"({"X": "x", "W": "w", "bias": "b"})"));
    checkKernel(oneOp("linear", {{"x", dt, {5}}, {"w", dt, {5, 3}}, {"b", dt, {3}}},
                      R"({"X": "x", "W": "w", "bias": "b"})"));
  }
}

TEST_CASE("linear_act: clip(gelu?(X·W + bias + residual)), whole and sharded, every float dtype",
          "[cpu][kernel]") {
  const char* xwb = R"({"X": "x", "W": "w", "bias": "b"})";
  const char* xwbr = R"({"X": "x", "W": "w", "bias": "b", "residual": "r"})";
  for (const std::string& dt : kFloats) {
    INFO(dt);
    // a GPT-2 MLP's first projection: the GELU, no residual
    checkKernel(oneOp("linear_act", {{"x", dt, {6, 5}}, {"w", dt, {5, 4}}, {"b", dt, {4}}}, xwb,
                      R"({"gelu": true})"));
    // a shortcut after the output projection, W stored [n, k]
    checkKernel(
        oneOp("linear_act",
              {{"x", dt, {2, 3, 5}}, {"w", dt, {3, 5}}, {"b", dt, {3}}, {"r", dt, {2, 3, 3}}}, xwbr,
              R"({"transpose_w": true})"));
    // residual, GELU and both bounds inside the values; X stored [..., k, m]
    checkKernel(
        oneOp("linear_act",
              {{"x", dt, {2, 5, 3}}, {"w", dt, {5, 4}}, {"b", dt, {4}}, {"r", dt, {2, 3, 4}}}, xwbr,
              R"({"transpose_x": true, "gelu": true, "min": -0.1, "max": 0.5})"));
    // relu (min 0) on a rank-1 X; nothing fused at all
    checkKernel(oneOp("linear_act", {{"x", dt, {5}}, {"w", dt, {5, 3}}, {"b", dt, {3}}}, xwb,
                      R"({"min": 0})"));
    // GELU then both bounds with no residual: oneDNN's post-ops in the
    // product for float32 and bfloat16, W in place and packed once
    for (const bool constant : {false, true}) {
      INFO((constant ? "constant W" : "plain W"));
      checkKernel(oneOp("linear_act", {{"x", dt, {2, 6, 5}}, {"w", dt, {4, 5}}, {"b", dt, {4}}},
                        xwb, R"({"transpose_w": true, "gelu": true, "min": -0.1, "max": 0.5})"),
                  1, {}, constant ? std::set<std::string>{"w"} : std::set<std::string>{});
    }
    checkKernel(oneOp("linear_act", {{"x", dt, {4, 5}}, {"w", dt, {5, 3}}, {"b", dt, {3}}}, xwb));
    // GELU's tanh approximation and SiLU (swish): in oneDNN's post-ops (with
    // a clip), and in the pass after a residual
    for (const auto& [act, clip] : {std::pair{R"("gelu_tanh": true)", R"("max": 0.5)"},
                                    std::pair{R"("silu": true)", R"("min": -0.2)"}}) {
      INFO(act);
      checkKernel(oneOp("linear_act", {{"x", dt, {6, 5}}, {"w", dt, {5, 4}}, {"b", dt, {4}}}, xwb,
                        std::string("{") + act + ", " + clip + "}"));
      checkKernel(
          oneOp("linear_act",
                {{"x", dt, {2, 3, 5}}, {"w", dt, {5, 4}}, {"b", dt, {4}}, {"r", dt, {2, 3, 4}}},
                xwbr, std::string("{") + act + "}"));
    }
  }
}

TEST_CASE("linear_act without a bias: LLaMA's gate (SiLU) and shortcut projections, whole and "
          "sharded, every float dtype",
          "[cpu][kernel]") {
  for (const std::string& dt : kFloats) {
    INFO(dt);
    // the gate: W stored [n, k], SiLU in the product's post-ops; W in place and packed once
    for (const bool constant : {false, true}) {
      INFO((constant ? "constant W" : "plain W"));
      checkKernel(oneOp("linear_act", {{"x", dt, {2, 6, 5}}, {"w", dt, {4, 5}}},
                        R"({"X": "x", "W": "w"})", R"({"transpose_w": true, "silu": true})"),
                  1, {}, constant ? std::set<std::string>{"w"} : std::set<std::string>{});
    }
    // the output projection and its shortcut
    checkKernel(oneOp("linear_act", {{"x", dt, {2, 3, 5}}, {"w", dt, {3, 5}}, {"r", dt, {2, 3, 3}}},
                      R"({"X": "x", "W": "w", "residual": "r"})", R"({"transpose_w": true})"));
    // T5's ReLU; nothing fused at all
    checkKernel(oneOp("linear_act", {{"x", dt, {6, 5}}, {"w", dt, {5, 4}}},
                      R"({"X": "x", "W": "w"})", R"({"min": 0})"));
    checkKernel(
        oneOp("linear_act", {{"x", dt, {4, 5}}, {"w", dt, {5, 3}}}, R"({"X": "x", "W": "w"})"));
  }
}

TEST_CASE("one row against a large W stored [n, k]: dot products on the team, whole and sharded",
          "[cpu][kernel][products][large]") {
  // [1, 512] x W [1024, 512] (2 MiB; its halves 1 MiB: still dot products),
  // with a bias, W constant or not, a rank-1 x, and without a bias (matmul),
  // at one kernel thread and at two, against the reference.
  cpu();
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    CpuBackend::setBlasThreads(threads);
    const graph::ExpandedGraph linear =
        oneOp("linear",
              {{"x", "float32", {1, 512}}, {"w", "float32", {1024, 512}}, {"b", "float32", {1024}}},
              R"({"X": "x", "W": "w", "bias": "b"})", R"({"transpose_w": true})");
    checkKernel(linear);
    checkKernel(linear, 2, {}, {"w"});
    checkKernel(
        oneOp("linear",
              {{"x", "float32", {512}}, {"w", "float32", {1024, 512}}, {"b", "float32", {1024}}},
              R"({"X": "x", "W": "w", "bias": "b"})", R"({"transpose_w": true})"));
    checkKernel(oneOp("matmul", {{"x", "float32", {1, 700}}, {"w", "float32", {1000, 700}}},
                      R"({"X": "x", "W": "w"})", R"({"transpose_w": true})"));
  }
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("few rows against a large constant W: panel products, whole and sharded",
          "[cpu][kernel][products][large]") {
  // 3 and 8 rows against 1 MiB or more of constant W (the panel engine where
  // the CPU has AVX-512), W stored [k, n] and [n, k], x read transposed, with
  // a bias and linear_act's GELU and clip (applied after the product), at
  // one kernel thread and at two, against the reference. (The clip's max stays
  // near the sums' scale: the error is relative to the largest result, and a
  // float32 dot product of 512 terms is off by about 5e-6 wherever oneDNN
  // sums in another order than the panels, as on CPUs without AVX-512.)
  cpu();
  for (const int threads : {1, 2}) {
    INFO(threads << " threads");
    CpuBackend::setBlasThreads(threads);
    const char* xwb = R"({"X": "x", "W": "w", "bias": "b"})";
    checkKernel(
        oneOp("linear",
              {{"x", "float32", {3, 512}}, {"w", "float32", {512, 600}}, {"b", "float32", {600}}},
              xwb),
        2, {}, {"w"});
    checkKernel(oneOp("matmul", {{"x", "float32", {700, 8}}, {"w", "float32", {1000, 700}}},
                      R"({"X": "x", "W": "w"})", R"({"transpose_x": true, "transpose_w": true})"),
                2, {}, {"w"});
    checkKernel(
        oneOp(
            "linear_act",
            {{"x", "float32", {2, 2, 512}}, {"w", "float32", {520, 512}}, {"b", "float32", {520}}},
            xwb, R"({"transpose_w": true, "gelu": true, "min": -0.1, "max": 4})"),
        2, {}, {"w"});
  }
  CpuBackend::setBlasThreads(1);
}

TEST_CASE("a W whose rows are 2 KiB apart is padded apart: the same numbers",
          "[cpu][kernel][products][large]") {
  // W stored [n, k] with n = 512, constant: where oneDNN packs it row-major
  // ([k, n], rows 2 KiB apart, as on CPUs without AVX-512), the engine packs
  // it with a cache line between rows instead. W [k, 512] not constant, read
  // by 32 rows or more: there, copied so on every run. Whole and sharded,
  // bias or not, float32 and bfloat16, against the reference.
  cpu();
  for (const std::string dt : {"float32", "bfloat16"}) {
    INFO(dt << ", W not constant");
    checkKernel(oneOp("linear", {{"x", dt, {64, 48}}, {"w", dt, {48, 512}}, {"b", dt, {512}}},
                      R"({"X": "x", "W": "w", "bias": "b"})"));
    checkKernel(
        oneOp("matmul", {{"x", dt, {2, 40, 24}}, {"w", dt, {24, 1024}}}, R"({"X": "x", "W": "w"})"),
        2);
  }
  for (const std::string dt : {"float32", "bfloat16"}) {
    INFO(dt);
    checkKernel(oneOp("linear", {{"x", dt, {16, 64}}, {"w", dt, {512, 64}}, {"b", dt, {512}}},
                      R"({"X": "x", "W": "w", "bias": "b"})", R"({"transpose_w": true})"),
                2, {}, {"w"});
    checkKernel(oneOp("matmul", {{"x", dt, {2, 16, 64}}, {"w", dt, {1024, 64}}},
                      R"({"X": "x", "W": "w"})", R"({"transpose_w": true})"),
                3, {}, {"w"});
  }
}

TEST_CASE("matmul and linear read transposed operands in place", "[cpu][kernel][products]") {
  // transpose_x / transpose_w (ONNX Gemm's transA / transB): against the naive
  // reference, sharded along every index dim (k included) and from the body.
  const char* xw = R"({"X": "x", "W": "w"})";
  const std::vector<std::tuple<Shape, Shape, const char*>> products = {
      {{7, 5}, {7, 6}, R"({"transpose_x": true})"},
      {{5, 7}, {6, 7}, R"({"transpose_w": true})"},
      {{7, 5}, {6, 7}, R"({"transpose_x": true, "transpose_w": true})"},
      {{2, 3, 7, 5}, {7, 6}, R"({"transpose_x": true})"},    // W broadcast: rows merge
      {{3, 4, 5}, {2, 1, 6, 5}, R"({"transpose_w": true})"}, // both operands broadcast
      {{2, 4, 3}, {2, 6, 4}, R"({"transpose_x": true, "transpose_w": true})"}};
  for (const std::string& dt : kAll) {
    for (const auto& [x, w, params] : products) {
      INFO("matmul " << dt << " " << shapeJson(x) << " @ " << shapeJson(w) << " " << params);
      checkKernel(oneOp("matmul", {{"x", dt, x}, {"w", dt, w}}, xw, params));
    }
  }
  const char* xwb = R"({"X": "x", "W": "w", "bias": "b"})";
  const std::vector<std::tuple<Shape, Shape, const char*>> layers = {
      {{5, 6}, {5, 4}, R"({"transpose_x": true})"},
      {{6, 5}, {4, 5}, R"({"transpose_w": true})"},
      {{2, 5, 3}, {4, 5}, R"({"transpose_x": true, "transpose_w": true})"},
      {{2, 3, 5}, {4, 5}, R"({"transpose_w": true})"},
      {{5}, {4, 5}, R"({"transpose_w": true})"}};
  for (const std::string& dt : kFloats) {
    for (const auto& [x, w, params] : layers) {
      INFO("linear " << dt << " " << shapeJson(x) << " @ " << shapeJson(w) << " " << params);
      const std::int64_t n =
          std::string(params).find("transpose_w") != std::string::npos ? w[0] : w[1];
      checkKernel(oneOp("linear", {{"x", dt, x}, {"w", dt, w}, {"b", dt, {n}}}, xwb, params));
    }
  }
}

TEST_CASE("products with a constant W: packed once, the same numbers whole and sharded",
          "[cpu][kernel][products]") {
  // A constant view of W may be kept in the engine's own layout (oneDNN's
  // blocked weights, float32 copies of 16-bit ones) across runs.
  for (const std::string& dt : kFloats) {
    INFO(dt);
    checkKernel(oneOp("matmul", {{"x", dt, {9, 16}}, {"w", dt, {24, 16}}},
                      R"({"X": "x", "W": "w"})", R"({"transpose_w": true})"),
                1, {}, {"w"});
    checkKernel(
        oneOp("matmul", {{"x", dt, {2, 3, 16}}, {"w", dt, {16, 10}}}, R"({"X": "x", "W": "w"})"), 1,
        {}, {"w"});
    checkKernel(oneOp("linear", {{"x", dt, {2, 4, 16}}, {"w", dt, {12, 16}}, {"b", dt, {12}}},
                      R"({"X": "x", "W": "w", "bias": "b"})", R"({"transpose_w": true})"),
                1, {}, {"w"});
  }
}

namespace {

// Host copies of a one-operation graph's inputs (op.inputs order) and a
// result buffer, with views whose data pointers a test can swap.
struct ProductRun {
  std::vector<Buffer> inputs;
  Buffer result;
  std::vector<PortViews> inViews() const {
    std::vector<PortViews> out;
    for (const Buffer& b : inputs) {
      out.push_back({b.view()});
    }
    return out;
  }
};

ProductRun productRun(const graph::ExpandedGraph& g, std::uint64_t seed) {
  ProductRun r;
  for (const Buffer& b : makeInputs(g, seed).buffers) {
    r.inputs.push_back(Buffer::host(b.dtype(), b.region()));
    std::memcpy(r.inputs.back().data(), b.data(), static_cast<std::size_t>(b.byteSize()));
  }
  const auto& t = g.operations[0].application.outputs[0].tensors[0];
  r.result = Buffer::host(parseDType(t.dtype), t.shape);
  return r;
}

} // namespace

TEST_CASE("a prepared product runs again with new data and re-packs a constant W that moved",
          "[cpu][kernel][products]") {
  // The third product has kRepackRows rows and more (1024, the batch folded
  // into m), so a W that is not constant is reordered on every call: new data
  // behind its unchanged pointer must be read.
  for (const std::string& dt : kFloats) {
    for (const int which : {0, 1, 2}) {
      const bool linear = which == 1;
      INFO(dt << (linear ? " linear" : " matmul") << (which == 2 ? ", 1024 rows" : ""));
      const graph::ExpandedGraph g =
          linear       ? oneOp("linear", {{"x", dt, {6, 32}}, {"w", dt, {20, 32}}, {"b", dt, {20}}},
                               R"({"X": "x", "W": "w", "bias": "b"})", R"({"transpose_w": true})")
          : which == 0 ? oneOp("matmul", {{"x", dt, {2, 6, 32}}, {"w", dt, {32, 20}}},
                               R"({"X": "x", "W": "w"})")
                       : oneOp("matmul", {{"x", dt, {2, 512, 32}}, {"w", dt, {32, 20}}},
                               R"({"X": "x", "W": "w"})");
      const graph::Operation& op = g.operations[0];
      const std::vector<Buffer> wantA = runWhole(g, makeInputs(g, 1));
      const std::vector<Buffer> wantB = runWhole(g, makeInputs(g, 2));
      ProductRun a = productRun(g, 1);
      ProductRun b = productRun(g, 2);
      for (const bool constant : {false, true}) {
        INFO((constant ? "constant W" : "plain W"));
        std::vector<PortViews> ins = a.inViews();
        ins[1][0].constant = constant;
        std::vector<PortViews> outs = {{a.result.view()}};
        const KernelCall call{op, op.application.index, ins, outs, 0};
        std::unique_ptr<PreparedKernel> prepared = cpu().prepareKernel(call);
        REQUIRE(prepared != nullptr);
        prepared->run(call);
        CHECK(relError(values(a.result), values(wantA[0])) <= tolerance(parseDType(dt)));
        // Every pointer moves to the second data set (W too: a constant W re-packs).
        std::vector<PortViews> insB = b.inViews();
        insB[1][0].constant = constant;
        std::vector<PortViews> outsB = {{b.result.view()}};
        prepared->run(KernelCall{op, op.application.index, insB, outsB, 0});
        CHECK(relError(values(b.result), values(wantB[0])) <= tolerance(parseDType(dt)));
        // Back to the first, and new data behind unchanged pointers of X (and of
        // W where it is not constant).
        std::memcpy(a.inputs[0].data(), b.inputs[0].data(),
                    static_cast<std::size_t>(b.inputs[0].byteSize()));
        if (!constant) {
          for (std::size_t i = 1; i < a.inputs.size(); ++i) { // W (and the bias)
            std::memcpy(a.inputs[i].data(), b.inputs[i].data(),
                        static_cast<std::size_t>(b.inputs[i].byteSize()));
          }
          prepared->run(call);
          CHECK(relError(values(a.result), values(wantB[0])) <= tolerance(parseDType(dt)));
          a = productRun(g, 1);
        } else {
          prepared->run(call);
          const std::vector<Buffer> mixed =
              runWhole(g, makeInputs(g, 1, {{"x", makeInputs(g, 2).buffers[0]}}));
          CHECK(relError(values(a.result), values(mixed[0])) <= tolerance(parseDType(dt)));
        }
      }
    }
  }
}

TEST_CASE("large products split into parts on the OpenMP team, and follow the thread count",
          "[cpu][kernel][products]") {
  // Large enough for a second thread (productThreads: 2^26 flops each), split
  // along the batch and m, W constant or not (the split along n, for single
  // rows, is tested in test_cpu_products.cpp): prepared at 2 threads, run at
  // 2, then at 1 (the parts one after another), then at 2 again, each time
  // against the reference.
  struct Case {
    graph::ExpandedGraph g;
    bool constantW;
  };
  std::vector<Case> cases;
  cases.push_back(
      {oneOp("matmul", {{"x", "float32", {4, 128, 256}}, {"w", "float32", {4, 256, 256}}},
             R"({"X": "x", "W": "w"})"),
       false});
  cases.push_back(
      {oneOp("linear",
             {{"x", "float32", {1024, 256}}, {"w", "float32", {128, 256}}, {"b", "float32", {128}}},
             R"({"X": "x", "W": "w", "bias": "b"})", R"({"transpose_w": true})"),
       true});
  cases.push_back(
      {oneOp("matmul", {{"x", "bfloat16", {2, 512, 256}}, {"w", "bfloat16", {256, 128}}},
             R"({"X": "x", "W": "w"})"),
       true});
  for (const Case& c : cases) {
    const graph::Operation& op = c.g.operations[0];
    INFO(op.kernel << " " << op.application.index.toString());
    const DType dtype = parseDType(op.application.outputs[0].tensors[0].dtype);
    const std::vector<Buffer> want = runWhole(c.g, makeInputs(c.g, 1));
    ProductRun r = productRun(c.g, 1);
    std::vector<PortViews> ins = r.inViews();
    ins[1][0].constant = c.constantW;
    std::vector<PortViews> outs = {{r.result.view()}};
    const KernelCall call{op, op.application.index, ins, outs, 0};
    CpuBackend::setBlasThreads(2);
    std::unique_ptr<PreparedKernel> prepared = cpu().prepareKernel(call);
    for (const int threads : {2, 1, 2}) {
      INFO(threads << " threads");
      CpuBackend::setBlasThreads(threads);
      std::memset(r.result.data(), 0, static_cast<std::size_t>(r.result.byteSize()));
      prepared->run(call);
      CHECK(relError(values(r.result), values(want[0])) <= tolerance(dtype));
    }
    CpuBackend::setBlasThreads(1);
  }
}

// Shapes and params of the one-axis reductions' tests.
const std::vector<std::pair<Shape, const char*>> kReduceCases = {
    {{9}, R"({"axis": 0})"},
    {{4, 7}, R"({"axis": -1})"},
    {{4, 7}, R"({"axis": 0, "keepdims": true})"},
    {{3, 5, 4}, R"({"axis": 1})"},
    {{3, 5, 4}, R"({"axis": 1, "keepdims": true})"},
};

TEST_CASE("sum, mean and max reduce an axis, split axes give partials", "[cpu][kernel]") {
  for (const char* k : {"sum", "mean", "max"}) {
    const bool ints = std::string(k) != "mean";
    for (const std::string& dt : ints ? kAll : kFloats) {
      for (const auto& [shape, params] : kReduceCases) {
        INFO(k << " " << dt << " " << shapeJson(shape) << " " << params);
        checkKernel(oneOp(k, {{"x", dt, shape}}, R"({"input": "x"})", params));
      }
    }
  }
}

TEST_CASE("min and prod reduce an axis, split axes give min and prod partials", "[cpu][kernel]") {
  for (const char* k : {"min", "prod"}) {
    for (const std::string& dt : kAll) {
      for (const auto& [shape, params] : kReduceCases) {
        INFO(k << " " << dt << " " << shapeJson(shape) << " " << params);
        checkKernel(oneOp(k, {{"x", dt, shape}}, R"({"input": "x"})", params));
      }
    }
  }
}

TEST_CASE("argmax and argmin: int64 indices, first or last, the axis never split",
          "[cpu][kernel]") {
  const std::vector<std::pair<Shape, const char*>> cases = {
      {{4, 7}, R"({"axis": 1})"},
      {{4, 7}, R"({"axis": 0, "keepdims": false})"},
      {{3, 5, 4}, R"({"axis": -2, "select_last_index": true})"},
      {{3, 5, 4}, R"({"axis": 2, "keepdims": false, "select_last_index": true})"},
  };
  for (const char* k : {"argmax", "argmin"}) {
    for (const std::string& dt : kAll) {
      for (const auto& [shape, params] : cases) {
        INFO(k << " " << dt << " " << shapeJson(shape) << " " << params);
        const graph::ExpandedGraph g = oneOp(k, {{"x", dt, shape}}, R"({"input": "x"})", params);
        CHECK(g.operations[0].application.reductionDims.empty());
        checkKernel(g);
      }
    }
  }
}

TEST_CASE("softmax, layernorm and rmsnorm keep rows whole", "[cpu][kernel]") {
  for (const std::string& dt : kFloats) {
    INFO(dt);
    checkKernel(oneOp("softmax", {{"x", dt, {4, 9}}}, R"({"input": "x"})"));
    checkKernel(oneOp("softmax", {{"x", dt, {3, 6, 4}}}, R"({"input": "x"})", R"({"axis": 1})"));
    checkKernel(oneOp("softmax", {{"x", dt, {8}}}, R"({"input": "x"})"));
    checkKernel(oneOp("layernorm", {{"x", dt, {5, 8}}, {"g", dt, {8}}, {"b", dt, {8}}},
                      R"({"input": "x", "gamma": "g", "beta": "b"})"));
    checkKernel(oneOp("layernorm", {{"x", dt, {2, 3, 6}}, {"g", dt, {6}}, {"b", dt, {6}}},
                      R"({"input": "x", "gamma": "g", "beta": "b"})", R"({"eps": 0.001})"));
    checkKernel(oneOp("layernorm", {{"x", dt, {6}}, {"g", dt, {6}}, {"b", dt, {6}}},
                      R"({"input": "x", "gamma": "g", "beta": "b"})"));
    checkKernel(
        oneOp("rmsnorm", {{"x", dt, {5, 8}}, {"g", dt, {8}}}, R"({"input": "x", "gamma": "g"})"));
    checkKernel(oneOp("rmsnorm", {{"x", dt, {2, 3, 6}}, {"g", dt, {6}}},
                      R"({"input": "x", "gamma": "g"})", R"({"eps": 0.001})"));
    checkKernel(
        oneOp("rmsnorm", {{"x", dt, {6}}, {"g", dt, {6}}}, R"({"input": "x", "gamma": "g"})"));
  }
  // Stability: huge logits do not overflow.
  graph::ExpandedGraph g = oneOp("softmax", {{"x", "float32", {1, 3}}}, R"({"input": "x"})");
  Buffer x = Buffer::host(DType::Float32, {1, 3});
  x.elements<float>()[0] = 1000.0f;
  x.elements<float>()[1] = 1000.0f;
  x.elements<float>()[2] = -1000.0f;
  Inputs in = makeInputs(g, 1, {{"x", x}});
  std::vector<double> y = values(runWhole(g, in)[0]);
  CHECK(y == std::vector<double>{0.5, 0.5, 0.0});
}

TEST_CASE("transpose, reshape and cast move data", "[cpu][kernel]") {
  for (const std::string& dt : kMoved) {
    INFO(dt);
    checkKernel(
        oneOp("transpose", {{"x", dt, {3, 5}}}, R"({"input": "x"})", R"({"perm": [1, 0]})"));
    checkKernel(oneOp("transpose", {{"x", dt, {2, 3, 4, 2}}}, R"({"input": "x"})",
                      R"({"perm": [0, 2, -1, 1]})"));
    checkKernel(
        oneOp("reshape", {{"x", dt, {4, 6}}}, R"({"input": "x"})", R"({"shape": [2, 2, 6]})"));
    checkKernel(
        oneOp("reshape", {{"x", dt, {2, 3, 4}}}, R"({"input": "x"})", R"({"shape": [-1, 4]})"));
    // No common refinement: the single-point (unshardable) form.
    checkKernel(oneOp("reshape", {{"x", dt, {2, 3}}}, R"({"input": "x"})", R"({"shape": [3, 2]})"));
  }
  for (const std::string& from : kMoved) {
    for (const std::string& to : kMoved) {
      INFO(from << " -> " << to);
      const bool coin = from == "bool"; // -1 or 0: true or false
      std::map<std::string, Buffer> overrides = {
          {"x", randomBuffer(parseDType(from), {3, 4}, 5, coin ? -1 : -100, coin ? 0 : 100)}};
      checkKernel(oneOp("cast", {{"x", from, {3, 4}}}, R"({"input": "x"})",
                        R"({"dtype": ")" + to + R"("})"),
                  1, overrides);
    }
  }
}

TEST_CASE("transposes larger than a tile copy in tiles, every element size", "[cpu][kernel]") {
  // Extents that are not multiples of the tile (8 to 64 elements), the moved
  // dim innermost (a matrix transpose, the heads' k^T) and in the middle; the
  // sharded runs cut the tiles' dims at odd offsets.
  const std::vector<std::pair<Shape, std::string>> cases = {
      {{37, 70}, "[1, 0]"},
      {{3, 20, 67}, "[0, 2, 1]"},
      {{2, 19, 3, 40}, "[0, 3, 1, 2]"},
      {{5, 33, 9}, "[2, 0, 1]"},
  };
  for (const std::string& dt : kMoved) {
    for (const auto& [shape, perm] : cases) {
      INFO(dt << " " << shapeJson(shape) << " perm " << perm);
      checkKernel(
          oneOp("transpose", {{"x", dt, shape}}, R"({"input": "x"})", R"({"perm": )" + perm + "}"));
    }
  }
}

TEST_CASE("copies of short or strided runs go by blocks of the inner dims, every element size",
          "[cpu][kernel]") {
  // Tiles of fewer than 64 elements and runs under 16 (or strided) copy a
  // block of up to 256 elements at a time through a table of offsets: a
  // transposed convolution's phases interleaved (2 x 5 tiles), a strided
  // innermost run of 17, a block that takes only some of the inner dims, and
  // a slice of runs of 3; the sharded runs cut the blocks' dims.
  const std::vector<std::pair<Shape, std::string>> transposes = {
      {{1, 3, 2, 2, 5, 5}, "[0, 1, 4, 2, 5, 3]"},
      {{3, 2, 2, 17, 17}, "[0, 3, 1, 4, 2]"},
      {{4, 6, 5}, "[0, 2, 1]"},
      {{9, 3, 7, 11}, "[3, 1, 0, 2]"},
  };
  for (const std::string& dt : kMoved) {
    for (const auto& [shape, perm] : transposes) {
      INFO(dt << " " << shapeJson(shape) << " perm " << perm);
      checkKernel(
          oneOp("transpose", {{"x", dt, shape}}, R"({"input": "x"})", R"({"perm": )" + perm + "}"));
    }
    INFO(dt << " slice");
    checkKernel(oneOp("slice", {{"x", dt, {5, 7, 6}}}, R"({"input": "x"})",
                      R"({"starts": [1, 2, 1], "ends": [4, 7, 4]})"));
  }
}

TEST_CASE("slice copies a box offset by starts", "[cpu][kernel]") {
  const std::vector<std::tuple<Shape, std::string, std::string>> cases = {
      {{9}, "[2]", "[7]"},
      {{6, 5}, "[1, 0]", "[4, 5]"},
      {{4, 5, 6}, "[0, 2, 1]", "[4, 5, 4]"},
      {{4, 5, 6}, "[3, 0, 5]", "[4, 5, 6]"},
  };
  for (const std::string& dt : kMoved) {
    for (const auto& [s, starts, ends] : cases) {
      INFO("slice " << dt << " " << shapeJson(s) << " " << starts << " " << ends);
      checkKernel(oneOp("slice", {{"x", dt, s}}, R"({"input": "x"})",
                        R"({"starts": )" + starts + R"(, "ends": )" + ends + "}"));
    }
  }
}

TEST_CASE("cast saturates and truncates floats into integers", "[cpu][kernel]") {
  graph::ExpandedGraph g =
      oneOp("cast", {{"x", "float64", {6}}}, R"({"input": "x"})", R"({"dtype": "int32"})");
  Buffer x = Buffer::host(DType::Float64, {6});
  const double in[6] = {2.7, -2.7, 1e20, -1e20, NAN, 2147483647.0};
  std::copy(in, in + 6, x.elements<double>().begin());
  std::vector<double> y = values(runWhole(g, makeInputs(g, 1, {{"x", x}}))[0]);
  CHECK(y == std::vector<double>{2, -2, 2147483647.0, -2147483648.0, 0, 2147483647.0});
}

TEST_CASE("cast to bool is nonzero (NaN too), and from bool true is 1", "[cpu][kernel]") {
  graph::ExpandedGraph g =
      oneOp("cast", {{"x", "float64", {6}}}, R"({"input": "x"})", R"({"dtype": "bool"})");
  Buffer x = Buffer::host(DType::Float64, {6});
  const double in[6] = {0.0, -0.0, NAN, 0.5, -3, 1e-300};
  std::copy(in, in + 6, x.elements<double>().begin());
  const Buffer y = runWhole(g, makeInputs(g, 1, {{"x", x}}))[0];
  std::vector<int> bytes;
  for (Bool b : y.elements<Bool>()) {
    bytes.push_back(b.bits);
  }
  CHECK(bytes == std::vector<int>{0, 0, 1, 1, 1, 1});
  graph::ExpandedGraph back =
      oneOp("cast", {{"b", "bool", {6}}}, R"({"input": "b"})", R"({"dtype": "float16"})");
  CHECK(values(runWhole(back, makeInputs(back, 1, {{"b", y}}))[0]) ==
        std::vector<double>{0, 0, 1, 1, 1, 1});
}

TEST_CASE("concat and split on several axes (list ports)", "[cpu][kernel]") {
  for (const std::string& dt : kMoved) {
    INFO(dt);
    checkKernel(oneOp("concat", {{"a", dt, {4, 3}}, {"b", dt, {4, 5}}},
                      R"({"tensors": ["a", "b"]})", R"({"axis": 1})"));
    checkKernel(oneOp("concat", {{"a", dt, {2, 3, 4}}, {"b", dt, {2, 1, 4}}, {"c", dt, {2, 4, 4}}},
                      R"({"tensors": ["a", "b", "c"]})", R"({"axis": -2})"));
    checkKernel(oneOp("concat", {{"a", dt, {3}}, {"b", dt, {5}}}, R"({"tensors": ["a", "b"]})",
                      R"({"axis": 0})"));
    checkKernel(oneOp("split", {{"x", dt, {10, 4}}}, R"({"input": "x"})",
                      R"({"axis": 0, "sections": [3, 7]})", R"({"results": ["p", "q"]})"));
    checkKernel(oneOp("split", {{"x", dt, {2, 9, 3}}}, R"({"input": "x"})",
                      R"({"axis": -2, "sections": [2, 3, 4]})", R"({"results": ["p", "q", "r"]})"));
  }
}

namespace {

struct ConvCase {
  Shape input;
  Shape weight;
  const char* params;
  bool bias = false;
};

// conv2d of each case in every float dtype, whole and sharded (checkKernel).
void checkConvCases(const std::vector<ConvCase>& cases) {
  for (const std::string& dt : kFloats) {
    for (const ConvCase& c : cases) {
      INFO(dt << " " << shapeJson(c.input) << " " << c.params << (c.bias ? " bias" : ""));
      std::vector<TensorSpec> tensors = {{"x", dt, c.input}, {"w", dt, c.weight}};
      if (c.bias) {
        tensors.push_back({"b", dt, {c.weight[0]}});
      }
      checkKernel(oneOp("conv2d", tensors,
                        c.bias ? R"({"input": "x", "weight": "w", "bias": "b"})"
                               : R"({"input": "x", "weight": "w"})",
                        c.params));
    }
  }
}

struct ActCase {
  Shape input;
  Shape weight;
  const char* params;
  bool bias = false;
  bool residual = false;
};

// conv2d_act of each case in every float dtype, whole and sharded over N, O,
// OH and OW (checkKernel; its splits of C, KH and KW would write an output
// element from two shards, and are skipped).
void checkConvActCases(const std::vector<ActCase>& cases) {
  for (const std::string& dt : kFloats) {
    for (const ActCase& c : cases) {
      INFO(dt << " " << shapeJson(c.input) << " * " << shapeJson(c.weight) << " " << c.params
              << (c.bias ? " bias" : "") << (c.residual ? " residual" : ""));
      std::vector<TensorSpec> tensors = {{"x", dt, c.input}, {"w", dt, c.weight}};
      std::string inputs = R"({"input": "x", "weight": "w")";
      if (c.bias) {
        tensors.push_back({"b", dt, {c.weight[0]}});
        inputs += R"(, "bias": "b")";
      }
      const graph::ExpandedGraph g = oneOp("conv2d_act", tensors, inputs + "}", c.params);
      if (c.residual) { // the result's shape
        tensors.push_back({"r", dt, g.operations[0].application.outputs[0].tensors[0].shape});
        inputs += R"(, "residual": "r")";
      }
      checkKernel(oneOp("conv2d_act", tensors, inputs + "}", c.params));
    }
  }
}

} // namespace

TEST_CASE("conv2d: stride, padding, dilation, C, KH, KW split into partials", "[cpu][kernel]") {
  const std::vector<ConvCase> cases = {
      {{1, 2, 5, 5}, {3, 2, 3, 3}, "{}"},
      {{2, 3, 6, 5}, {2, 3, 3, 3}, R"({"padding": [1, 1]})"},
      {{1, 2, 9, 7}, {2, 2, 3, 2}, R"({"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1]})"},
  };
  checkConvCases(cases);
}

TEST_CASE("conv2d with bias: added once, by the shards at the start of C, KH and KW",
          "[cpu][kernel]") {
  const std::vector<ConvCase> cases = {
      {{2, 3, 6, 5}, {2, 3, 3, 3}, R"({"padding": [1, 1]})", true},
      {{1, 2, 9, 7}, {2, 2, 3, 2}, R"({"stride": [2, 1], "dilation": [2, 1]})", true},
      {{1, 4, 6, 6}, {4, 1, 3, 3}, R"({"groups": 4, "padding": [1, 1]})", true},
      {{2, 6, 5, 5}, {3, 2, 3, 3}, R"({"groups": 3, "stride": [2, 2], "padding": [1, 0]})", true},
  };
  checkConvCases(cases);
}

TEST_CASE("conv2d groups == O: depthwise and grouped channels, shards split", "[cpu][kernel]") {
  const std::vector<ConvCase> cases = {
      {{1, 4, 6, 6}, {4, 1, 3, 3}, R"({"groups": 4, "padding": [1, 1]})"},
      {{2, 6, 5, 5}, {3, 2, 3, 3}, R"({"groups": 3, "stride": [2, 2], "padding": [1, 0]})"},
      {{1, 3, 7, 6}, {3, 1, 3, 2}, R"({"groups": 3, "dilation": [2, 1], "padding": [2, 1]})"},
  };
  checkConvCases(cases);
}

TEST_CASE("conv2d_act: clip(act(conv2d + bias + residual)), relu, relu6, silu, hard_swish or no "
          "clip, output shards",
          "[cpu][kernel]") {
  const std::vector<ActCase> cases = {
      // groups == 1: relu after bias and residual (a ResNet block's second conv)
      {{2, 3, 6, 5}, {4, 3, 3, 3}, R"({"padding": [1, 1], "min": 0})", true, true},
      // ReLU6 with bias, stride and dilation, no residual
      {{1, 2, 9, 7},
       {3, 2, 3, 2},
       R"({"stride": [2, 1], "dilation": [2, 1], "min": 0, "max": 6})",
       true,
       false},
      // depthwise, residual without bias, both bounds inside the values
      {{1, 4, 6, 6},
       {4, 1, 3, 3},
       R"({"groups": 4, "padding": [1, 1], "min": -0.5, "max": 0.5})",
       false,
       true},
      // grouped channels, no clip (the defaults): conv2d + bias + residual
      {{2, 6, 5, 5},
       {3, 2, 3, 3},
       R"({"groups": 3, "stride": [2, 2], "padding": [1, 0]})",
       true,
       true},
      // a 1 x 1 at stride 2; min above max gives max everywhere, as clip
      {{1, 3, 6, 6}, {2, 3, 1, 1}, R"({"stride": [2, 2], "min": 1, "max": -1})", false, true},
      // nothing fused: conv2d
      {{1, 2, 5, 5}, {3, 2, 3, 3}, "{}"},
      // SiLU after bias (EfficientNet's), depthwise at stride 2
      {{2, 4, 7, 6},
       {4, 1, 3, 3},
       R"({"groups": 4, "stride": [2, 2], "padding": [1, 1], "silu": true})",
       true,
       false},
      // HardSwish after bias and residual, then a clip above it
      {{1, 3, 6, 5},
       {4, 3, 3, 3},
       R"({"padding": [1, 1], "hard_swish": true, "max": 0.25})",
       true,
       true},
      // SiLU with a residual and a min: the order is residual, SiLU, clip
      {{1, 3, 5, 5}, {2, 3, 1, 1}, R"({"silu": true, "min": -0.1})", false, true},
  };
  checkConvActCases(cases);
}

TEST_CASE("conv2d_act refuses a shard that splits C, KH or KW (its output has no combine)",
          "[cpu][errors]") {
  const graph::ExpandedGraph g =
      oneOp("conv2d_act", {{"x", "float32", {1, 4, 5, 5}}, {"w", "float32", {2, 4, 3, 3}}},
            R"({"input": "x", "weight": "w"})", R"({"min": 0})");
  const graph::Operation& op = g.operations[0];
  CHECK_FALSE(op.application.reductionSplittable);
  const Inputs in = makeInputs(g, 3);
  Buffer out = Buffer::host(DType::Float32, op.application.outputs[0].tensors[0].shape);
  const std::vector<PortViews> outs = {{out.view()}};
  CHECK_THROWS_WITH(
      cpu().runKernel(op, ZRange({0, 0, 0, 0, 0, 0, 0}, {1, 2, 3, 3, 2, 3, 3}), in.views, outs),
      Contains("splits the reduction dims"));
}

TEST_CASE("maxpool2d and avgpool2d: windows, padding, dilation, output shards", "[cpu][kernel]") {
  const std::vector<std::pair<Shape, const char*>> maxCases = {
      {{2, 3, 7, 7}, R"({"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]})"},
      {{1, 2, 6, 5},
       R"({"kernel": [2, 3], "stride": [1, 2], "padding": [1, 1], "dilation": [2, 1]})"},
      {{1, 2, 4, 4}, R"({"kernel": [2, 2], "stride": [2, 2]})"},
  };
  const std::vector<std::pair<Shape, const char*>> avgCases = {
      {{2, 3, 7, 7}, R"({"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1]})"},
      {{1, 2, 5, 6},
       R"({"kernel": [3, 2], "stride": [1, 2], "padding": [2, 1], "count_include_pad": true})"},
      {{1, 2, 4, 4}, R"({"kernel": [2, 2], "stride": [2, 2]})"},
  };
  for (const std::string& dt : kFloats) {
    for (const auto& [shape, params] : maxCases) {
      INFO("maxpool2d " << dt << " " << shapeJson(shape) << " " << params);
      checkKernel(oneOp("maxpool2d", {{"x", dt, shape}}, R"({"input": "x"})", params));
    }
    for (const auto& [shape, params] : avgCases) {
      INFO("avgpool2d " << dt << " " << shapeJson(shape) << " " << params);
      checkKernel(oneOp("avgpool2d", {{"x", dt, shape}}, R"({"input": "x"})", params));
    }
  }
}

TEST_CASE("pool padding: -infinity for max, left out of (or counted in) the average",
          "[cpu][kernel]") {
  // All inputs negative: a max that read padding as 0 would return 0. A 3 x 3
  // window at stride 1 and padding 1 over a 2 x 2 input covers all 4 elements
  // and 5 padding positions.
  const char* params = R"({"kernel": [3, 3], "padding": [1, 1]})";
  Buffer x = Buffer::host(DType::Float32, {1, 1, 2, 2});
  const float values2x2[4] = {-4, -3, -2, -1};
  std::copy(values2x2, values2x2 + 4, x.elements<float>().begin());
  auto run = [&](const char* kernel, const char* p) {
    graph::ExpandedGraph g =
        oneOp(kernel, {{"x", "float32", {1, 1, 2, 2}}}, R"({"input": "x"})", p);
    std::vector<Buffer> out = runWhole(g, makeInputs(g, 1, {{"x", x}}));
    const auto got = out[0].elements<float>();
    return std::vector<float>(got.begin(), got.end());
  };
  CHECK(run("maxpool2d", params) == std::vector<float>{-1, -1, -1, -1});
  // Every 3 x 3 window around a 2 x 2 input covers all 4 elements: mean -2.5,
  // or -10 / 9 when the 5 padding positions count.
  CHECK(run("avgpool2d", params) == std::vector<float>{-2.5f, -2.5f, -2.5f, -2.5f});
  const std::vector<float> withPad =
      run("avgpool2d", R"({"kernel": [3, 3], "padding": [1, 1], "count_include_pad": true})");
  for (float v : withPad) {
    CHECK(v == Approx(-10.0 / 9.0));
  }
  // A 2 x 2 window, stride 1, padding 1: the corner windows hold one element.
  const std::vector<float> corner =
      run("avgpool2d", R"({"kernel": [2, 2], "stride": [2, 2], "padding": [1, 1]})");
  CHECK(corner == std::vector<float>{-4, -3, -2, -1});
}

TEST_CASE("global_avgpool: H and W split into partials of the full mean", "[cpu][kernel]") {
  for (const std::string& dt : kFloats) {
    for (const Shape& s : {Shape{2, 3, 5, 4}, Shape{1, 2, 1, 7}}) {
      INFO(dt << " " << shapeJson(s));
      checkKernel(oneOp("global_avgpool", {{"x", dt, s}}, R"({"input": "x"})"));
    }
  }
}

TEST_CASE("global_avgpool: a channels-last image's pixels over the kernel threads' team",
          "[cpu][kernel][layout]") {
  // 96 channels of 30 x 30 (86,400 elements: past team.hpp's kTeamFrom) and
  // 5 of 3 x 3 (on the calling thread), each image a run of pixels; the
  // means as the row-major loop gives them, up to the order of the sums.
  for (const Shape& shape : {Shape{2, 96, 30, 30}, Shape{3, 5, 3, 3}}) {
    INFO(shapeJson(shape));
    const ZRange all = ZRange::fromShape(ZPoint(shape));
    const graph::ExpandedGraph g =
        oneOp("global_avgpool", {{"x", "float32", shape}}, R"({"input": "x"})");
    const TensorBuffers in = drawInputs(g, 7);
    Buffer x = cpu().allocate(DType::Float32, all, 0).withStrides(channelsLastStrides(shape));
    cpu().copyRegion(in.at("x").view(), x.view(), all);
    const Shape means = {shape[0], shape[1], 1, 1};
    for (const int threads : {1, 2}) {
      INFO(threads << " kernel threads");
      CpuBackend::setBlasThreads(threads);
      Buffer y = Buffer::host(DType::Float32, means);
      const std::vector<PortViews> ins{{x.view()}}, outs{{y.view()}};
      cpu().runKernel(g.operations[0], g.operations[0].application.index, ins, outs);
      CpuBackend::setBlasThreads(1);
      const Buffer want = evaluateGraph(cpu(), g, in).at(g.tensors[g.outputs[0]].name);
      CHECK(relError(values(y), values(want)) <= 1e-5);
    }
  }
}

TEST_CASE("batchnorm: per-channel constants, every dim split", "[cpu][kernel]") {
  for (const std::string& dt : kFloats) {
    for (const Shape& s : {Shape{2, 3, 4, 5}, Shape{5, 4}, Shape{1, 3, 2, 2, 3}}) {
      INFO(dt << " " << shapeJson(s));
      const Shape c = {s[1]};
      graph::ExpandedGraph g =
          oneOp("batchnorm", {{"x", dt, s}, {"g", dt, c}, {"b", dt, c}, {"m", dt, c}, {"v", dt, c}},
                R"({"input": "x", "scale": "g", "bias": "b", "mean": "m", "var": "v"})",
                R"({"epsilon": 0.001})");
      // Variances must be positive.
      checkKernel(g, 1, {{"v", randomBuffer(parseDType(dt), c, 5, 0.25, 2.0)}});
    }
  }
}

TEST_CASE("gather along any axis, negative indices wrap, bad ones are input errors",
          "[cpu][kernel]") {
  struct Case {
    Shape data;
    Shape indices;
    std::int64_t axis;
  };
  const std::vector<Case> cases = {
      {{10, 6}, {3, 4}, 0}, {{2, 7, 3}, {5}, 1}, {{4, 5}, {2, 2}, -1}, {{6}, {}, 0}};
  for (const std::string& dt :
       {std::string("float32"), std::string("bfloat16"), std::string("int64")}) {
    for (const char* it : {"int32", "int64"}) {
      for (const Case& c : cases) {
        INFO(dt << " " << it << " " << shapeJson(c.data) << " " << shapeJson(c.indices) << " "
                << c.axis);
        checkKernel(oneOp("gather", {{"d", dt, c.data}, {"i", it, c.indices}},
                          R"({"data": "d", "indices": "i"})",
                          R"({"axis": )" + std::to_string(c.axis) + "}"));
      }
    }
  }
  // Negative indices count from the end of the axis, like ONNX.
  graph::ExpandedGraph g = oneOp("gather", {{"d", "float32", {2, 5}}, {"i", "int64", {3}}},
                                 R"({"data": "d", "indices": "i"})", R"({"axis": 1})");
  Buffer idx = Buffer::host(DType::Int64, {3});
  const std::int64_t picks[3] = {-1, 0, -5};
  std::copy(picks, picks + 3, idx.elements<std::int64_t>().begin());
  Inputs in = makeInputs(g, 1, {{"i", idx}});
  checkNaive(g, in);
  const std::vector<double> data = values(in.buffers[0]);
  const std::vector<double> got = values(runWhole(g, in)[0]);
  CHECK(got == std::vector<double>{data[4], data[0], data[0], data[9], data[5], data[5]});
  for (std::int64_t bad : {5, -6}) {
    idx.elements<std::int64_t>()[1] = bad;
    try {
      runWhole(g, makeInputs(g, 1, {{"i", idx}}));
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exitCode() == ExitCode::InvalidInput);
      CHECK(e.message() == "operation op (gather): indices[1] is " + std::to_string(bad) +
                               ", outside [-5, 5) (data's axis 1 has 5 elements)");
    }
  }
}

TEST_CASE("embedding gathers table rows, bad indices are input errors", "[cpu][kernel]") {
  for (const std::string& dt : kAll) {
    for (const char* it : {"int32", "int64"}) {
      INFO(dt << " " << it);
      checkKernel(oneOp("embedding", {{"t", dt, {10, 6}}, {"i", it, {3, 4}}},
                        R"({"table": "t", "indices": "i"})"));
      checkKernel(oneOp("embedding", {{"t", dt, {7, 5}}, {"i", it, {6}}},
                        R"({"table": "t", "indices": "i"})"));
    }
  }
  graph::ExpandedGraph g = oneOp("embedding", {{"t", "float32", {10, 2}}, {"i", "int64", {2, 2}}},
                                 R"({"table": "t", "indices": "i"})");
  Buffer idx = Buffer::host(DType::Int64, {2, 2});
  idx.elements<std::int64_t>()[3] = 10;
  try {
    runWhole(g, makeInputs(g, 1, {{"i", idx}}));
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    CHECK(e.message() ==
          "operation op (embedding): indices[1, 1] is 10, outside the table's 10 rows");
  }
}

// ---------------------------------------------------------------- interface errors

TEST_CASE("runKernel errors: unknown kernel, views that do not cover", "[cpu][errors]") {
  graph::ExpandedGraph g = oneOp("relu", {{"x", "float32", {4, 4}}}, R"({"input": "x"})");
  graph::Operation op = g.operations[0];
  Inputs in = makeInputs(g, 1);
  Buffer out = Buffer::host(DType::Float32, {4, 4});
  std::vector<PortViews> outs = {{out.view()}};

  // A kernel the backend lacks runs from its template's body; without one it
  // is an input error.
  graph::Operation unknown = op;
  unknown.kernel = "foo";
  cpu().runKernel(unknown, op.application.index, in.views, outs);
  unknown.application.body = nullptr;
  try {
    cpu().runKernel(unknown, op.application.index, in.views, outs);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.exitCode() == ExitCode::InvalidInput);
    CHECK(e.message() == "backend cpu has no kernel \"foo\" (operation op), and its template "
                         "has no body to run instead");
  }

  // A shard whose input view misses part of its selection is a bug.
  std::vector<PortViews> small = {{in.buffers[0].view(ZRange({0, 0}, {2, 4}))}};
  CHECK_THROWS_AS(cpu().runKernel(op, ZRange({0, 0}, {3, 4}), small, outs), InternalError);
  CHECK_THROWS_WITH(cpu().runKernel(op, ZRange({0, 0}, {3, 4}), small, outs),
                    Contains("does not cover the selection zr[0:3, 0:4]"));
  // Wrong dtype, missing view, wrong port count.
  Buffer wrong = Buffer::host(DType::Float64, {4, 4});
  std::vector<PortViews> badType = {{wrong.view()}};
  CHECK_THROWS_WITH(cpu().runKernel(op, op.application.index, badType, outs),
                    Contains("input input is float32 but the view is float64"));
  std::vector<PortViews> absent = {{TensorView{}}};
  CHECK_THROWS_WITH(cpu().runKernel(op, op.application.index, absent, outs),
                    Contains("no view was given"));
  std::vector<PortViews> none;
  CHECK_THROWS_AS(cpu().runKernel(op, op.application.index, none, outs), InternalError);
  // A shard outside the index space.
  CHECK_THROWS_WITH(cpu().runKernel(op, ZRange({2, 2}, {5, 4}), in.views, outs),
                    Contains("is not inside the index space"));
}

TEST_CASE("float-only kernels refuse integer tensors", "[cpu][errors]") {
  // The standard library's constraints never let an integer reach these
  // kernels; a backend called directly (or through a user kernel of the same
  // name) still says which kernel and dtype, not undefined behaviour.
  const std::vector<graph::ExpandedGraph> graphs = {
      oneOp("softmax", {{"x", "float32", {2, 3}}}, R"({"input": "x"})"),
      oneOp("layernorm", {{"x", "float32", {2, 3}}, {"g", "float32", {3}}, {"b", "float32", {3}}},
            R"({"input": "x", "gamma": "g", "beta": "b"})"),
      oneOp("linear", {{"x", "float32", {2, 3}}, {"w", "float32", {3, 4}}, {"b", "float32", {4}}},
            R"({"X": "x", "W": "w", "bias": "b"})"),
      oneOp("conv2d", {{"x", "float32", {1, 1, 3, 3}}, {"w", "float32", {1, 1, 2, 2}}},
            R"({"input": "x", "weight": "w"})"),
      oneOp("conv2d_act", {{"x", "float32", {1, 1, 3, 3}}, {"w", "float32", {1, 1, 2, 2}}},
            R"({"input": "x", "weight": "w"})"),
      oneOp("clip", {{"x", "float32", {2, 3}}}, R"({"input": "x"})"),
      oneOp("rdiv_scalar", {{"x", "float32", {2, 3}}}, R"({"input": "x"})"),
      oneOp("pow", {{"a", "float32", {2, 3}}, {"b", "float32", {3}}}, R"({"A": "a", "B": "b"})"),
      oneOp("log", {{"x", "float32", {2, 3}}}, R"({"input": "x"})"),
  };
  for (const graph::ExpandedGraph& g : graphs) {
    graph::Operation op = g.operations[0];
    INFO(op.kernel);
    std::vector<Buffer> buffers;
    auto retype = [&](std::vector<metakernel::PortResult>& ports) {
      std::vector<PortViews> views;
      for (metakernel::PortResult& port : ports) {
        PortViews pv;
        for (metakernel::TensorType& t : port.tensors) {
          t.dtype = "int32";
          buffers.push_back(Buffer::host(DType::Int32, t.shape));
          pv.push_back(buffers.back().view());
        }
        views.push_back(std::move(pv));
      }
      return views;
    };
    buffers.reserve(8);
    std::vector<PortViews> ins = retype(op.application.inputs);
    std::vector<PortViews> outs = retype(op.application.outputs);
    try {
      cpu().runKernel(op, op.application.index, ins, outs);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exitCode() == ExitCode::InvalidInput);
      CHECK(e.message() ==
            "backend cpu: kernel " + op.kernel + " does not support int32 (operation op)");
    }
  }
}

TEST_CASE("shard selections clip to the tensor (conv2d padding, concat elements)", "[cpu]") {
  graph::ExpandedGraph g =
      oneOp("conv2d", {{"x", "float32", {1, 1, 4, 4}}, {"w", "float32", {1, 1, 3, 3}}},
            R"({"input": "x", "weight": "w"})", R"({"padding": [1, 1]})");
  const graph::Operation& op = g.operations[0];
  // The first output row reads input rows -1..1: clipped to 0..1.
  ShardSelections s = shardSelections(op, ZRange({0, 0, 0, 0, 0, 0, 0}, {1, 1, 1, 4, 1, 3, 3}));
  CHECK(s.inputs[0][0] == ZRange({0, 0, 0, 0}, {1, 1, 2, 4}));
  graph::ExpandedGraph c = oneOp("concat", {{"a", "float32", {2, 3}}, {"b", "float32", {2, 5}}},
                                 R"({"tensors": ["a", "b"]})", R"({"axis": 1})");
  ShardSelections t = shardSelections(c.operations[0], ZRange({0, 4}, {2, 8}));
  CHECK(t.inputs[0][0].isEmpty());
  CHECK(t.inputs[0][1] == ZRange({0, 1}, {2, 5}));
}

TEST_CASE("forEachAxisPart visits the concat elements a shard reaches", "[cpu]") {
  graph::ExpandedGraph g = oneOp(
      "concat", {{"a", "float32", {2, 3}}, {"b", "float32", {2, 1}}, {"c", "float32", {2, 4}}},
      R"({"tensors": ["a", "b", "c"]})", R"({"axis": 1})");
  using Parts = std::vector<std::pair<std::size_t, ZRange>>;
  auto parts = [&](const ZRange& index) {
    Parts out;
    forEachAxisPart(KernelCall{g.operations[0], index, {}, {}, 0}, "sizes",
                    [&](std::size_t j, const ZRange& part) { out.emplace_back(j, part); });
    return out;
  };
  CHECK(parts(ZRange({0, 2}, {2, 5})) == Parts{{0, ZRange({0, 2}, {2, 3})},
                                               {1, ZRange({0, 3}, {2, 4})},
                                               {2, ZRange({0, 4}, {2, 5})}});
  CHECK(parts(ZRange({1, 4}, {2, 8})) == Parts{{2, ZRange({1, 4}, {2, 8})}});
}

TEST_CASE("evaluateGraph runs a whole graph unsharded", "[cpu]") {
  const std::string text = R"({"tapestry": "graph/v1", "name": "mlp",
    "tensors": {"x": {"dtype": "float32", "shape": [4, 6]}, "w1": {"dtype": "float32", "shape": [6, 8]},
                "w2": {"dtype": "float32", "shape": [8, 3]}},
    "operations": [
      {"name": "fc1", "kernel": "matmul", "inputs": {"X": "x", "W": "w1"}, "outputs": {"result": "h"}},
      {"name": "act", "kernel": "relu", "inputs": {"input": "h"}, "outputs": {"result": "a"}},
      {"name": "fc2", "kernel": "matmul", "inputs": {"X": "a", "W": "w2"}, "outputs": {"result": "y"}}]})";
  json::Document doc = json::Document::parse(SourceFile("mlp.json", text));
  graph::ExpandedGraph g = graph::expand(graph::decodeGraph(json::Value(doc)), lib());
  TensorBuffers inputs = drawInputs(g, 42);
  TensorBuffers all = evaluateGraph(cpu(), g, inputs, 2);
  REQUIRE(all.count("y") == 1);
  CHECK(all.at("y").device() == 2);
  // By hand: y = relu(x·w1)·w2.
  std::vector<double> x = values(inputs.at("x")), w1 = values(inputs.at("w1")),
                      w2 = values(inputs.at("w2"));
  std::vector<double> want(12, 0.0);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int h = 0; h < 8; ++h) {
        double s = 0;
        for (int k = 0; k < 6; ++k) {
          s += x[i * 6 + k] * w1[k * 8 + h];
        }
        want[i * 3 + j] += std::max(s, 0.0) * w2[h * 3 + j];
      }
    }
  }
  CHECK(relError(values(all.at("y")), want) <= 1e-5);
  inputs.erase("w2");
  CHECK_THROWS_WITH(evaluateGraph(cpu(), g, inputs), Contains("missing input tensor w2"));
}

TEST_CASE("the block cache reuses released large blocks, zeroed, and bounds what it keeps",
          "[cpu][memory]") {
  BlockCache cache(4096, 3 * 8192);
  std::byte* first = nullptr;
  {
    std::shared_ptr<std::byte> a = cache.take(8000); // rounds up to 8192 (whole pages)
    first = a.get();
    CHECK(reinterpret_cast<std::uintptr_t>(first) % 64 == 0);
    std::memset(a.get(), 0x5a, 8000);
  }
  CHECK(cache.cachedBytes() == 8192);
  std::shared_ptr<std::byte> b = cache.take(8192); // same rounded size: the same block
  CHECK(b.get() == first);
  CHECK(cache.reused() == 1);
  CHECK(cache.cachedBytes() == 0);
  CHECK(std::all_of(b.get(), b.get() + 8192, [](std::byte v) { return v == std::byte{0}; }));

  std::byte* kept = nullptr;
  {
    std::shared_ptr<std::byte> small = cache.take(100); // below `smallest`: never kept
    std::shared_ptr<std::byte> other = cache.take(3 * 8192);
    std::shared_ptr<std::byte> more = cache.take(2 * 8192);
    kept = more.get();
    // Released in reverse: `more` is kept; `other` would exceed the bound.
  }
  CHECK(cache.cachedBytes() == 2 * 8192);
  CHECK(cache.take(3 * 8192).get() != nullptr); // fresh: that size was not kept
  CHECK(cache.reused() == 1);
  std::shared_ptr<std::byte> c = cache.take(2 * 8192);
  CHECK(c.get() == kept);
  CHECK(cache.reused() == 2);
  b.reset();
  CHECK(cache.cachedBytes() == 8192);
}

TEST_CASE("the block cache hands out the large block of a size released last", "[cpu][memory]") {
  // Last in, first out, as the small blocks' stacks: the block released last
  // is the one still in cache.
  BlockCache cache(4096, 1 << 20);
  std::byte* older = nullptr;
  std::byte* newer = nullptr;
  {
    std::shared_ptr<std::byte> a = cache.take(8192);
    std::shared_ptr<std::byte> b = cache.take(8192);
    older = a.get();
    newer = b.get();
    a.reset(); // released first
  }            // b released last
  for (int run = 0; run < 3; ++run) {
    std::shared_ptr<std::byte> again = cache.take(8192);
    CHECK(again.get() == newer);
  }
  std::shared_ptr<std::byte> one = cache.take(8192);
  std::shared_ptr<std::byte> two = cache.take(8192);
  CHECK(one.get() == newer);
  CHECK(two.get() == older);
  CHECK(cache.reused() == 5);
}

TEST_CASE("the block cache keeps small blocks per lane", "[cpu][memory]") {
  BlockCache cache(1 << 20, 1 << 24, 1 << 16);
  std::byte* ofOne = nullptr;
  std::byte* ofZero = nullptr;
  {
    std::shared_ptr<std::byte> a = cache.take(4000, true, 1);
    std::shared_ptr<std::byte> b = cache.take(4000, true, 0);
    ofOne = a.get();
    ofZero = b.get();
    std::memset(a.get(), 0x5a, 4000);
  }
  // Each lane gets back the block it released, zeroed; another lane does not.
  std::shared_ptr<std::byte> zero = cache.take(4000, true, 0);
  CHECK(zero.get() == ofZero);
  std::shared_ptr<std::byte> two = cache.take(4000, true, 2);
  CHECK(two.get() != ofOne);
  std::shared_ptr<std::byte> one = cache.take(4000, true, 1);
  CHECK(one.get() == ofOne);
  CHECK(std::all_of(one.get(), one.get() + 4000, [](std::byte v) { return v == std::byte{0}; }));
  // Lanes past the last share stacks; a negative lane (the host) is lane 0.
  one.reset();
  CHECK(cache.take(4000, false, 9).get() == ofOne);
  zero.reset();
  CHECK(cache.take(4000, false, -1).get() == ofZero);
  CHECK(cache.reused() == 4);
}

TEST_CASE("a small block whose power of two is the large size goes back to its own stack",
          "[cpu][memory]") {
  // 600 KB is below `smallest` (1 MiB) and rounds up to 1 MiB: it must come
  // back to the small stack it was taken from, not to the large blocks (where
  // no request of 600 KB finds it: a fresh block every time, all kept).
  BlockCache cache(1 << 20, 1 << 30, 1 << 24);
  std::byte* first = nullptr;
  {
    std::shared_ptr<std::byte> a = cache.take(600 * 1024, false, 0);
    first = a.get();
  }
  CHECK(cache.cachedBytes() == 0); // not filed with the large blocks
  for (int run = 0; run < 3; ++run) {
    std::shared_ptr<std::byte> again = cache.take(600 * 1024, false, 0);
    CHECK(again.get() == first);
  }
  CHECK(cache.reused() == 3);
  CHECK(cache.cachedBytes() == 0);
  // A request of exactly 1 MiB is a large block, kept with the large ones.
  { std::shared_ptr<std::byte> large = cache.take(1 << 20, false, 0); }
  CHECK(cache.cachedBytes() == 1 << 20);
}

TEST_CASE("CPU buffers from 1 MiB come from the block cache and stay valid after the backend",
          "[cpu][memory]") {
  Buffer kept;
  {
    CpuBackend backend(2);
    const ZRange big = ZRange::fromShape(ZPoint({512, 1024})); // 2 MiB of float32
    std::byte* first = nullptr;
    {
      Buffer a = backend.allocate(DType::Float32, big, 1);
      first = a.view().data;
      first[0] = std::byte{7};
    }
    Buffer again = backend.allocate(DType::Float32, big, 0);
    CHECK(again.view().data == first);
    CHECK(again.view().data[0] == std::byte{0});
    CHECK(again.device() == 0);
    kept = std::move(again);
  }
  kept.view().data[1] = std::byte{1}; // outlives its backend (ASan would object otherwise)
  CHECK(kept.byteSize() == 2u << 20);
}
