// Elementwise kernels (over 800 lines: the 60-odd kernels share one prepared
// run loop and its operand walks, and are registered from one table):
// relu, gelu, tanh, exp, sigmoid, neg, erf, sqrt,
// reciprocal, log, abs, sign, floor, ceil, round, the trigonometric and
// hyperbolic functions, softplus, softsign (unary); clip, the *_scalar kernels
// and the alpha activations (unary with float params); add, sub, mul, div, pow,
// maximum, minimum, mod, fmod (binary, NumPy broadcasting); comparisons and
// logic (bool results); where (a bool condition picks X or Y, all three
// broadcast). Every operand is walked through
// its IPF, so broadcasting (zero strides), any shard and any view layout take
// the same path. Each call is prepared once (run_loop.hpp): the loop nest and
// the inner function are chosen then, and run() only walks the data.
//
// float32 runs through vector_math.hpp (SLEEF's exp, erf, tanh, log and pow,
// the CPU's widest vectors; strided runs gathered in chunks). The other dtypes
// compute element by element in their compute type (Num<T>::C), with the
// functions of <cmath>.
#include <cmath>
#include <memory>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/eltwise_dnnl.hpp"
#include "backends/cpu/kernel_util.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/team.hpp"
#include "backends/cpu/vector_math.hpp"

namespace tapestry::backend::cpu {

namespace {

// ---------------------------------------------------------------- scalar ops
// Each: kInts (whether integers are allowed), kVec (its float32 loop), a
// constructor from the call (for params), vecParams() (the float32 loop's p
// and q) and the op itself in compute type C.

struct NoParams {
  explicit NoParams(const KernelCall&) {}
  std::array<float, 2> vecParams() const { return {0.0f, 0.0f}; }
};

struct Relu : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = true;
  static constexpr VUnary kVec = VUnary::Relu;
  template <class C> C operator()(C x) const { return x < C(0) ? C(0) : x; } // NaN stays NaN
};
struct Gelu : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Gelu;
  template <class C> C operator()(C x) const { return geluErf(x); }
};
struct GeluTanh : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::GeluTanh;
  template <class C> C operator()(C x) const { return geluTanh(x); }
};
struct Tanh : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Tanh;
  template <class C> C operator()(C x) const { return std::tanh(x); }
};
struct Exp : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Exp;
  template <class C> C operator()(C x) const { return std::exp(x); }
};
struct Sigmoid : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Sigmoid;
  template <class C> C operator()(C x) const { return C(1) / (C(1) + std::exp(-x)); }
};
struct Silu : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Silu;
  template <class C> C operator()(C x) const { return cpu::silu(x); }
};
struct Neg : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = true;
  static constexpr VUnary kVec = VUnary::Neg;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return wrapSub(0, x);
    } else {
      return -x;
    }
  }
};
struct Erf : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Erf;
  template <class C> C operator()(C x) const { return std::erf(x); }
};
struct Sqrt : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Sqrt;
  template <class C> C operator()(C x) const { return std::sqrt(x); }
};
struct Reciprocal : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Reciprocal;
  template <class C> C operator()(C x) const { return C(1) / x; }
};
struct Log : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Log;
  template <class C> C operator()(C x) const { return std::log(x); }
};
struct Abs : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = true;
  static constexpr VUnary kVec = VUnary::Abs;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return x < 0 ? wrapSub(0, x) : x;
    } else {
      return std::fabs(x);
    }
  }
};

// Unary kernels with float params (floats only). Bounds and values are
// doubles; each element computes in its compute type C, the params rounded to
// C (for a bound that is exact: x < lo in double exactly when x < C(lo)).
struct Clip {
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::Clip;
  double lo;
  double hi;
  explicit Clip(const KernelCall& call)
      : lo(floatParam(call.op, "min")), hi(floatParam(call.op, "max")) {}
  std::array<float, 2> vecParams() const {
    return {static_cast<float>(lo), static_cast<float>(hi)}; // beyond float's range: +-inf
  }
  // min(max(x, lo), hi) as the float64 reference: NaN stays NaN, and a lo
  // above hi gives hi.
  template <class C> C operator()(C x) const {
    const C t = x < static_cast<C>(lo) ? static_cast<C>(lo) : x;
    return static_cast<C>(hi) < t ? static_cast<C>(hi) : t;
  }
};
struct ScalarValue {
  static constexpr bool kInts = false;
  double value;
  explicit ScalarValue(const KernelCall& call) : value(floatParam(call.op, "value")) {}
  std::array<float, 2> vecParams() const { return {static_cast<float>(value), 0.0f}; }
};
struct AddScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  static constexpr VUnary kVec = VUnary::AddScalar;
  template <class C> C operator()(C x) const { return x + static_cast<C>(value); }
};
struct MulScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  static constexpr VUnary kVec = VUnary::MulScalar;
  template <class C> C operator()(C x) const { return x * static_cast<C>(value); }
};
struct RsubScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  static constexpr VUnary kVec = VUnary::RsubScalar;
  template <class C> C operator()(C x) const { return static_cast<C>(value) - x; }
};
struct RdivScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  static constexpr VUnary kVec = VUnary::RdivScalar;
  template <class C> C operator()(C x) const { return static_cast<C>(value) / x; }
};
struct DivScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  static constexpr VUnary kVec = VUnary::DivScalar;
  template <class C> C operator()(C x) const { return x / static_cast<C>(value); }
};
struct PowScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  static constexpr VUnary kVec = VUnary::PowScalar;
  template <class C> C operator()(C x) const { return std::pow(x, static_cast<C>(value)); }
};

struct Add {
  static constexpr bool kInts = true;
  static constexpr VBinary kVec = VBinary::Add;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrapAdd(a, b);
    } else {
      return a + b;
    }
  }
};
struct Sub {
  static constexpr bool kInts = true;
  static constexpr VBinary kVec = VBinary::Sub;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrapSub(a, b);
    } else {
      return a - b;
    }
  }
};
struct Mul {
  static constexpr bool kInts = true;
  static constexpr VBinary kVec = VBinary::Mul;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrapMul(a, b);
    } else {
      return a * b;
    }
  }
};
struct Div {
  static constexpr bool kInts = false;
  static constexpr VBinary kVec = VBinary::Div;
  template <class C> C operator()(C a, C b) const { return a / b; }
};
struct Pow {
  static constexpr bool kInts = false;
  static constexpr VBinary kVec = VBinary::Pow;
  template <class C> C operator()(C a, C b) const { return std::pow(a, b); }
};

// ---------------------------------------------------------------- issue 34's ops
// No float32 vector loop (no kVec): every dtype computes element by element in
// its compute type with <cmath>. kFloat32Vec is false for them.

struct Floor : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::floor(x); }
};
struct Ceil : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::ceil(x); }
};
struct Round : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::nearbyint(x); } // halves to even
};
struct Sign : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = true;
  template <class C> C operator()(C x) const { return x > C(0) ? C(1) : x < C(0) ? C(-1) : x; }
};
// The <cmath> functions of one argument, by pointer (float and double).
template <float (*F)(float), double (*D)(double)> struct Math : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_same_v<C, float>) {
      return F(x);
    } else {
      return D(x);
    }
  }
};
using Sin =
    Math<static_cast<float (*)(float)>(std::sin), static_cast<double (*)(double)>(std::sin)>;
using Cos =
    Math<static_cast<float (*)(float)>(std::cos), static_cast<double (*)(double)>(std::cos)>;
using Tan =
    Math<static_cast<float (*)(float)>(std::tan), static_cast<double (*)(double)>(std::tan)>;
using Asin =
    Math<static_cast<float (*)(float)>(std::asin), static_cast<double (*)(double)>(std::asin)>;
using Acos =
    Math<static_cast<float (*)(float)>(std::acos), static_cast<double (*)(double)>(std::acos)>;
using Atan =
    Math<static_cast<float (*)(float)>(std::atan), static_cast<double (*)(double)>(std::atan)>;
using Sinh =
    Math<static_cast<float (*)(float)>(std::sinh), static_cast<double (*)(double)>(std::sinh)>;
using Cosh =
    Math<static_cast<float (*)(float)>(std::cosh), static_cast<double (*)(double)>(std::cosh)>;
using Asinh =
    Math<static_cast<float (*)(float)>(std::asinh), static_cast<double (*)(double)>(std::asinh)>;
using Acosh =
    Math<static_cast<float (*)(float)>(std::acosh), static_cast<double (*)(double)>(std::acosh)>;
using Atanh =
    Math<static_cast<float (*)(float)>(std::atanh), static_cast<double (*)(double)>(std::atanh)>;
struct Softplus : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::log(std::exp(x) + C(1)); }
};
struct Softsign : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return x / (C(1) + std::fabs(x)); }
};
// The activations with an alpha param (floats only), alpha rounded to C.
struct Alpha {
  static constexpr bool kInts = false;
  double alpha;
  explicit Alpha(const KernelCall& call) : alpha(floatParam(call.op, "alpha")) {}
};
struct LeakyRelu : Alpha {
  using Alpha::Alpha;
  template <class C> C operator()(C x) const { return x < C(0) ? x * static_cast<C>(alpha) : x; }
};
struct Elu : Alpha {
  using Alpha::Alpha;
  template <class C> C operator()(C x) const {
    return x < C(0) ? static_cast<C>(alpha) * (std::exp(x) - C(1)) : x;
  }
};
struct Celu : Alpha {
  using Alpha::Alpha;
  template <class C> C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    const C neg = a * (std::exp(x / a) - C(1));
    return (x < C(0) ? C(0) : x) + (neg < C(0) ? neg : C(0));
  }
};
struct ThresholdedRelu : Alpha {
  using Alpha::Alpha;
  template <class C> C operator()(C x) const { return x > static_cast<C>(alpha) ? x : C(0); }
};
struct Selu : Alpha {
  double gamma;
  explicit Selu(const KernelCall& call) : Alpha(call), gamma(floatParam(call.op, "gamma")) {}
  template <class C> C operator()(C x) const {
    return static_cast<C>(gamma) * (x > C(0) ? x : static_cast<C>(alpha) * (std::exp(x) - C(1)));
  }
};
// max(0, min(1, alpha * x + beta)); NaN stays NaN (every comparison false).
struct HardSigmoid : Alpha {
  static constexpr VUnary kVec = VUnary::HardSigmoid;
  double beta;
  explicit HardSigmoid(const KernelCall& call) : Alpha(call), beta(floatParam(call.op, "beta")) {}
  std::array<float, 2> vecParams() const {
    return {static_cast<float>(alpha), static_cast<float>(beta)};
  }
  template <class C> C operator()(C x) const {
    const C y = x * static_cast<C>(alpha) + static_cast<C>(beta);
    return y < C(0) ? C(0) : (y > C(1) ? C(1) : y);
  }
};
// x * max(0, min(1, x / 6 + 1/2)).
struct HardSwish : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  static constexpr VUnary kVec = VUnary::HardSwish;
  template <class C> C operator()(C x) const { return cpu::hardSwish(x); }
};
// Tests with a bool result (kBool: the result port is bool).
struct IsNan : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> bool operator()(C x) const { return std::isnan(x); }
};
struct IsInf : NoParams {
  using NoParams::NoParams;
  static constexpr bool kInts = false;
  template <class C> bool operator()(C x) const { return std::isinf(x); }
};
struct Not : NoParams {
  using NoParams::NoParams;
  static constexpr bool kBoolOperands = true;
  static constexpr bool kInts = false;
  bool operator()(bool x) const { return !x; }
};

// Binary, same dtype in and out; max/min propagate NaN like the body.
struct Maximum {
  static constexpr bool kInts = true;
  template <class C> C operator()(C a, C b) const {
    if constexpr (!std::is_integral_v<C>) {
      if (std::isnan(a) || std::isnan(b)) {
        return std::isnan(a) ? a : b;
      }
    }
    return a < b ? b : a;
  }
};
struct Minimum {
  static constexpr bool kInts = true;
  template <class C> C operator()(C a, C b) const {
    if constexpr (!std::is_integral_v<C>) {
      if (std::isnan(a) || std::isnan(b)) {
        return std::isnan(a) ? a : b;
      }
    }
    return b < a ? b : a;
  }
};
// Integers: a zero divisor gives 0 (ONNX leaves it undefined), INT_MIN % -1 gives 0.
struct Mod {
  static constexpr bool kInts = true;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0 || b == -1) {
        return 0;
      }
      const C r = a % b;
      return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    } else {
      const C r = std::fmod(a, b);
      return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
  }
};
struct Fmod {
  static constexpr bool kInts = true;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return b == 0 || b == -1 ? 0 : a % b;
    } else {
      return std::fmod(a, b);
    }
  }
};
// prelu: X (a) below 0 times its slope (b).
struct Prelu {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x, C slope) const { return x < C(0) ? x * slope : x; }
};
// Comparisons and logic: a bool result.
struct Equal {
  static constexpr bool kInts = true;
  template <class C> bool operator()(C a, C b) const { return a == b; }
};
struct Less {
  static constexpr bool kInts = true;
  template <class C> bool operator()(C a, C b) const { return a < b; }
};
struct LessEqual {
  static constexpr bool kInts = true;
  template <class C> bool operator()(C a, C b) const { return a <= b; }
};
struct Greater {
  static constexpr bool kInts = true;
  template <class C> bool operator()(C a, C b) const { return a > b; }
};
struct GreaterEqual {
  static constexpr bool kInts = true;
  template <class C> bool operator()(C a, C b) const { return a >= b; }
};
struct And {
  static constexpr bool kBoolOperands = true;
  static constexpr bool kInts = false;
  bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
  static constexpr bool kBoolOperands = true;
  static constexpr bool kInts = false;
  bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
  static constexpr bool kBoolOperands = true;
  static constexpr bool kInts = false;
  bool operator()(bool a, bool b) const { return a != b; }
};

// Whether Op has a float32 vector loop (vector_math.hpp).
template <class Op> constexpr bool kHasVec = requires {
  Op::kVec;
};

// ---------------------------------------------------------------- unary

RunLoop<2> unaryLoop(const KernelCall& call) {
  return ipfLoop<2>(call, {&call.inputs[0][0], &call.outputs[0][0]},
                    {&inputIpf(call, 0), &outputIpf(call, 0)}, true);
}

class UnaryF32 final : public PreparedKernel {
public:
  UnaryF32(const KernelCall& call, VUnary op, std::array<float, 2> params)
      : fn_(vectorKernels().unary[static_cast<int>(op)]), p_(params[0]), q_(params[1]),
        loop_(unaryLoop(call)) {}
  void run(const KernelCall& call) override {
    const std::int64_t sx = loop_.stride(0);
    const std::int64_t sy = loop_.stride(1);
    auto piece = [&](const auto& at, std::int64_t m) {
      throughChunks(reinterpret_cast<const float*>(at[0]), sx, reinterpret_cast<float*>(at[1]), sy,
                    m, [&](const float* x, float* y, std::int64_t k) { fn_(x, y, k, p_, q_); });
    };
    forEachPiece(loop_, {call.inputs[0][0].data, call.outputs[0][0].data}, 1, 16, piece);
  }

private:
  void (*fn_)(const float*, float*, std::int64_t, float, float);
  float p_, q_;
  RunLoop<2> loop_;
};

// R: the result's storage type (Bool for the tests).
template <class T, class Op, class R = T> class UnaryScalar final : public PreparedKernel {
public:
  UnaryScalar(const KernelCall& call, const Op& op) : op_(op), loop_(unaryLoop(call)) {}
  void run(const KernelCall& call) override {
    const std::int64_t n = loop_.length();
    const std::int64_t sx = loop_.stride(0);
    const std::int64_t sy = loop_.stride(1);
    loop_.forEach({call.inputs[0][0].data, call.outputs[0][0].data}, [&](const auto& at) {
      const T* x = reinterpret_cast<const T*>(at[0]);
      R* y = reinterpret_cast<R*>(at[1]);
      if (sx == 1 && sy == 1) {
        for (std::int64_t j = 0; j < n; ++j) {
          y[j] = Num<R>::store(op_(Num<T>::load(x[j])));
        }
      } else {
        for (std::int64_t j = 0; j < n; ++j) {
          y[j * sy] = Num<R>::store(op_(Num<T>::load(x[j * sx])));
        }
      }
    });
  }

private:
  Op op_;
  RunLoop<2> loop_;
};

template <class Op> std::unique_ptr<PreparedKernel> prepareUnary(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  const Op op(call);
  if constexpr (kHasVec<Op>) {
    if (dtype == DType::Float32) {
      if (std::unique_ptr<PreparedKernel> dnnl =
              prepareDnnlUnary(call, Op::kVec, unaryLoop(call))) {
        return dnnl;
      }
      return std::make_unique<UnaryF32>(call, Op::kVec, op.vecParams());
    }
  }
  std::unique_ptr<PreparedKernel> prepared;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T> && !Op::kInts) {
      unsupportedDType(call, dtype);
    } else {
      prepared = std::make_unique<UnaryScalar<T, Op>>(call, op);
    }
  });
  return prepared;
}

// ---------------------------------------------------------------- binary

RunLoop<3> binaryLoop(const KernelCall& call) {
  return ipfLoop<3>(call, {&call.inputs[0][0], &call.inputs[1][0], &call.outputs[0][0]},
                    {&inputIpf(call, 0), &inputIpf(call, 1), &outputIpf(call, 0)}, true);
}

using BinaryFn = void (*)(const float*, const float*, float*, std::int64_t);

// y = op(a, b) over a run of n, each operand at its stride: contiguous or
// broadcast (stride 0) operands straight into the vector loop, others through
// chunk buffers.
void binaryRun(const std::array<BinaryFn, 3>& fn, const float* a, std::int64_t sa, const float* b,
               std::int64_t sb, float* y, std::int64_t sy, std::int64_t n) {
  constexpr int kBoth = static_cast<int>(VScalar::None);
  constexpr int kScalarA = static_cast<int>(VScalar::A);
  constexpr int kScalarB = static_cast<int>(VScalar::B);
  if (sy == 1 && (sa == 1 || sa == 0) && (sb == 1 || sb == 0) && (sa | sb) != 0) {
    fn[sa == 0 ? kScalarA : sb == 0 ? kScalarB : kBoth](a, b, y, n);
    return;
  }
  alignas(64) float ba[kChunk];
  alignas(64) float bb[kChunk];
  alignas(64) float by[kChunk];
  // A scalar operand stays one value, unless both are (then a is gathered).
  const bool scalarA = sa == 0 && sb != 0;
  const bool scalarB = sb == 0;
  const int mode = scalarA ? kScalarA : scalarB ? kScalarB : kBoth;
  for (std::int64_t j0 = 0; j0 < n; j0 += kChunk) {
    const std::int64_t m = std::min(kChunk, n - j0);
    const float* pa = a + j0 * sa;
    const float* pb = b + j0 * sb;
    if (!scalarA && sa != 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        ba[j] = pa[j * sa];
      }
      pa = ba;
    }
    if (!scalarB && sb != 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        bb[j] = pb[j * sb];
      }
      pb = bb;
    }
    float* py = sy == 1 ? y + j0 : by;
    fn[mode](pa, pb, py, m);
    if (sy != 1) {
      for (std::int64_t j = 0; j < m; ++j) {
        y[(j0 + j) * sy] = by[j];
      }
    }
  }
}

class BinaryF32 final : public PreparedKernel {
public:
  BinaryF32(const KernelCall& call, VBinary op) : loop_(binaryLoop(call)) {
    const VectorKernels& vk = vectorKernels();
    for (int m = 0; m < 3; ++m) {
      fn_[static_cast<std::size_t>(m)] = vk.binary[static_cast<int>(op)][m];
    }
  }
  void run(const KernelCall& call) override {
    const std::int64_t sa = loop_.stride(0);
    const std::int64_t sb = loop_.stride(1);
    const std::int64_t sy = loop_.stride(2);
    auto piece = [&](const auto& at, std::int64_t m) {
      binaryRun(fn_, reinterpret_cast<const float*>(at[0]), sa,
                reinterpret_cast<const float*>(at[1]), sb, reinterpret_cast<float*>(at[2]), sy, m);
    };
    forEachPiece(loop_, {call.inputs[0][0].data, call.inputs[1][0].data, call.outputs[0][0].data},
                 1, 16, piece);
  }

private:
  std::array<BinaryFn, 3> fn_{};
  RunLoop<3> loop_;
};

// R: the result's storage type (Bool for comparisons and logic).
template <class T, class Op, class R = T> class BinaryScalar final : public PreparedKernel {
public:
  explicit BinaryScalar(const KernelCall& call) : loop_(binaryLoop(call)) {}
  void run(const KernelCall& call) override {
    const std::int64_t n = loop_.length();
    const std::int64_t sa = loop_.stride(0);
    const std::int64_t sb = loop_.stride(1);
    const std::int64_t sy = loop_.stride(2);
    const Op op;
    loop_.forEach({call.inputs[0][0].data, call.inputs[1][0].data, call.outputs[0][0].data},
                  [&](const auto& at) {
                    const T* xa = reinterpret_cast<const T*>(at[0]);
                    const T* xb = reinterpret_cast<const T*>(at[1]);
                    R* y = reinterpret_cast<R*>(at[2]);
                    if (sa == 1 && sb == 1 && sy == 1) {
                      for (std::int64_t j = 0; j < n; ++j) {
                        y[j] = Num<R>::store(op(Num<T>::load(xa[j]), Num<T>::load(xb[j])));
                      }
                    } else if (sa == 1 && sb == 0 && sy == 1) {
                      const auto vb = Num<T>::load(*xb);
                      for (std::int64_t j = 0; j < n; ++j) {
                        y[j] = Num<R>::store(op(Num<T>::load(xa[j]), vb));
                      }
                    } else if (sa == 0 && sb == 1 && sy == 1) {
                      const auto va = Num<T>::load(*xa);
                      for (std::int64_t j = 0; j < n; ++j) {
                        y[j] = Num<R>::store(op(va, Num<T>::load(xb[j])));
                      }
                    } else {
                      for (std::int64_t j = 0; j < n; ++j) {
                        y[j * sy] =
                            Num<R>::store(op(Num<T>::load(xa[j * sa]), Num<T>::load(xb[j * sb])));
                      }
                    }
                  });
  }

private:
  RunLoop<3> loop_;
};

template <class Op> std::unique_ptr<PreparedKernel> prepareBinary(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  if (call.inputs[0][0].dtype != dtype || call.inputs[1][0].dtype != dtype) {
    unsupportedDType(call, call.inputs[0][0].dtype == dtype ? call.inputs[1][0].dtype
                                                            : call.inputs[0][0].dtype);
  }
  if constexpr (kHasVec<Op>) {
    if (dtype == DType::Float32) {
      return std::make_unique<BinaryF32>(call, Op::kVec);
    }
  }
  std::unique_ptr<PreparedKernel> prepared;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T> && !Op::kInts) {
      unsupportedDType(call, dtype);
    } else {
      prepared = std::make_unique<BinaryScalar<T, Op>>(call);
    }
  });
  return prepared;
}

// Unary and binary tests: the operands' dtype in, bool out. Logic (And, Or,
// Xor, Not) takes bool operands only; the others any number dtype, and equal
// bool too.
template <class Op> constexpr bool kLogic = requires {
  Op::kBoolOperands;
};

template <class Op> std::unique_ptr<PreparedKernel> prepareUnaryTest(const KernelCall& call) {
  const DType dtype = call.inputs[0][0].dtype;
  if (call.outputs[0][0].dtype != DType::Bool || (dtype == DType::Bool) != kLogic<Op>) {
    unsupportedDType(call,
                     call.outputs[0][0].dtype != DType::Bool ? call.outputs[0][0].dtype : dtype);
  }
  const Op op(call);
  std::unique_ptr<PreparedKernel> prepared;
  dispatchWithBool(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, Bool> == kLogic<Op> && !(kIsInt<T> && !Op::kInts)) {
      prepared = std::make_unique<UnaryScalar<T, Op, Bool>>(call, op);
    } else {
      unsupportedDType(call, dtype);
    }
  });
  return prepared;
}

template <class Op> std::unique_ptr<PreparedKernel> prepareBinaryTest(const KernelCall& call) {
  const DType dtype = call.inputs[0][0].dtype;
  if (call.inputs[1][0].dtype != dtype) {
    unsupportedDType(call, call.inputs[1][0].dtype);
  }
  if (call.outputs[0][0].dtype != DType::Bool) {
    unsupportedDType(call, call.outputs[0][0].dtype);
  }
  std::unique_ptr<PreparedKernel> prepared;
  dispatchWithBool(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr bool isBool = std::is_same_v<T, Bool>;
    if constexpr (kLogic<Op> ? isBool : (!isBool || std::is_same_v<Op, Equal>)) {
      prepared = std::make_unique<BinaryScalar<T, Op, Bool>>(call);
    } else {
      unsupportedDType(call, dtype);
    }
  });
  return prepared;
}

// ---------------------------------------------------------------- where

// where: result = condition ? X : Y. It only selects, so X and Y are copied as
// stored (any dtype, bit for bit, as an unsigned integer of their size); the
// four operands share one loop.
template <class E> class Where final : public PreparedKernel {
public:
  explicit Where(const KernelCall& call)
      : loop_(ipfLoop<4>(
            call, {&call.inputs[0][0], &call.inputs[1][0], &call.inputs[2][0], &call.outputs[0][0]},
            {&inputIpf(call, 0), &inputIpf(call, 1), &inputIpf(call, 2), &outputIpf(call, 0)})) {}
  void run(const KernelCall& call) override {
    const std::int64_t n = loop_.length();
    const bool unit = loop_.unitStride();
    const std::int64_t s0 = loop_.stride(0);
    const std::int64_t s1 = loop_.stride(1);
    const std::int64_t s2 = loop_.stride(2);
    const std::int64_t s3 = loop_.stride(3);
    loop_.forEach({call.inputs[0][0].data, call.inputs[1][0].data, call.inputs[2][0].data,
                   call.outputs[0][0].data},
                  [&](const auto& at) {
                    const auto* c = reinterpret_cast<const std::uint8_t*>(at[0]);
                    const E* x = reinterpret_cast<const E*>(at[1]);
                    const E* y = reinterpret_cast<const E*>(at[2]);
                    E* r = reinterpret_cast<E*>(at[3]);
                    if (unit) {
                      for (std::int64_t j = 0; j < n; ++j) {
                        r[j] = c[j] != 0 ? x[j] : y[j];
                      }
                    } else {
                      for (std::int64_t j = 0; j < n; ++j) {
                        r[j * s3] = c[j * s0] != 0 ? x[j * s1] : y[j * s2];
                      }
                    }
                  });
  }

private:
  RunLoop<4> loop_;
};

std::unique_ptr<PreparedKernel> prepareWhere(const KernelCall& call) {
  if (const std::optional<DType> bad = backend::whereOperandMismatch(call)) {
    unsupportedDType(call, *bad);
  }
  switch (dtypeSize(call.outputs[0][0].dtype)) {
  case 1:
    return std::make_unique<Where<std::uint8_t>>(call);
  case 2:
    return std::make_unique<Where<std::uint16_t>>(call);
  case 4:
    return std::make_unique<Where<std::uint32_t>>(call);
  default:
    break;
  }
  return std::make_unique<Where<std::uint64_t>>(call);
}

template <std::unique_ptr<PreparedKernel> (*Prepare)(const KernelCall&)>
void add(CpuRegistry& registry, const char* name) {
  registry.add(name, &runPrepared<Prepare>, Prepare);
}

} // namespace

void registerElementwiseKernels(CpuRegistry& registry) {
  add<&prepareUnary<Relu>>(registry, "relu");
  add<&prepareUnary<Gelu>>(registry, "gelu");
  add<&prepareUnary<GeluTanh>>(registry, "gelu_tanh");
  add<&prepareUnary<Tanh>>(registry, "tanh");
  add<&prepareUnary<Exp>>(registry, "exp");
  add<&prepareUnary<Sigmoid>>(registry, "sigmoid");
  add<&prepareUnary<Silu>>(registry, "silu");
  add<&prepareUnary<Neg>>(registry, "neg");
  add<&prepareBinary<Add>>(registry, "add");
  add<&prepareBinary<Sub>>(registry, "sub");
  add<&prepareBinary<Mul>>(registry, "mul");
  add<&prepareBinary<Div>>(registry, "div");
  add<&prepareUnary<Erf>>(registry, "erf");
  add<&prepareUnary<Sqrt>>(registry, "sqrt");
  add<&prepareUnary<Reciprocal>>(registry, "reciprocal");
  add<&prepareUnary<Log>>(registry, "log");
  add<&prepareUnary<Abs>>(registry, "abs");
  add<&prepareUnary<Clip>>(registry, "clip");
  add<&prepareUnary<AddScalar>>(registry, "add_scalar");
  add<&prepareUnary<MulScalar>>(registry, "mul_scalar");
  add<&prepareUnary<RsubScalar>>(registry, "rsub_scalar");
  add<&prepareUnary<RdivScalar>>(registry, "rdiv_scalar");
  add<&prepareUnary<DivScalar>>(registry, "div_scalar");
  add<&prepareUnary<PowScalar>>(registry, "pow_scalar");
  add<&prepareBinary<Pow>>(registry, "pow");
  add<&prepareWhere>(registry, "where");
  // issue 34
  add<&prepareBinary<Maximum>>(registry, "maximum");
  add<&prepareBinary<Minimum>>(registry, "minimum");
  add<&prepareBinary<Mod>>(registry, "mod");
  add<&prepareBinary<Fmod>>(registry, "fmod");
  add<&prepareBinaryTest<Equal>>(registry, "equal");
  add<&prepareBinaryTest<Less>>(registry, "less");
  add<&prepareBinaryTest<LessEqual>>(registry, "less_equal");
  add<&prepareBinaryTest<Greater>>(registry, "greater");
  add<&prepareBinaryTest<GreaterEqual>>(registry, "greater_equal");
  add<&prepareBinaryTest<And>>(registry, "logical_and");
  add<&prepareBinaryTest<Or>>(registry, "logical_or");
  add<&prepareBinaryTest<Xor>>(registry, "logical_xor");
  add<&prepareUnaryTest<Not>>(registry, "logical_not");
  add<&prepareUnaryTest<IsNan>>(registry, "isnan");
  add<&prepareUnaryTest<IsInf>>(registry, "isinf");
  add<&prepareUnary<Sign>>(registry, "sign");
  add<&prepareUnary<Floor>>(registry, "floor");
  add<&prepareUnary<Ceil>>(registry, "ceil");
  add<&prepareUnary<Round>>(registry, "round");
  add<&prepareUnary<Sin>>(registry, "sin");
  add<&prepareUnary<Cos>>(registry, "cos");
  add<&prepareUnary<Tan>>(registry, "tan");
  add<&prepareUnary<Asin>>(registry, "asin");
  add<&prepareUnary<Acos>>(registry, "acos");
  add<&prepareUnary<Atan>>(registry, "atan");
  add<&prepareUnary<Sinh>>(registry, "sinh");
  add<&prepareUnary<Cosh>>(registry, "cosh");
  add<&prepareUnary<Asinh>>(registry, "asinh");
  add<&prepareUnary<Acosh>>(registry, "acosh");
  add<&prepareUnary<Atanh>>(registry, "atanh");
  add<&prepareUnary<Softplus>>(registry, "softplus");
  add<&prepareUnary<Softsign>>(registry, "softsign");
  add<&prepareUnary<LeakyRelu>>(registry, "leaky_relu");
  add<&prepareUnary<Elu>>(registry, "elu");
  add<&prepareUnary<Selu>>(registry, "selu");
  add<&prepareUnary<Celu>>(registry, "celu");
  add<&prepareUnary<ThresholdedRelu>>(registry, "thresholded_relu");
  add<&prepareUnary<HardSigmoid>>(registry, "hard_sigmoid");
  add<&prepareUnary<HardSwish>>(registry, "hard_swish");
  add<&prepareBinary<Prelu>>(registry, "prelu");
}

} // namespace tapestry::backend::cpu
