// Elementwise kernels: relu, gelu, tanh, exp, sigmoid, neg, erf, sqrt,
// reciprocal, log, abs (unary); clip and the *_scalar kernels (unary with float
// params); add, sub, mul, div, pow (binary, NumPy broadcasting); where (a bool
// condition picks X or Y, all three broadcast). Every operand is walked through
// its IPF, so broadcasting (zero rows), any shard and any view layout take the
// same path; unit-stride runs get a loop the compiler can vectorize.
#include <cmath>

#include "backends/cpu/kernel_util.hpp"

namespace tapestry::backend::cpu {

namespace {

struct Relu {
  static constexpr bool kInts = true;
  template <class C> C operator()(C x) const { return x < C(0) ? C(0) : x; } // NaN stays NaN
};
struct Gelu {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const {
    // The exact form: x * Phi(x) = x/2 * (1 + erf(x / sqrt(2))).
    return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
  }
};
struct Tanh {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::tanh(x); }
};
struct Exp {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::exp(x); }
};
struct Sigmoid {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return C(1) / (C(1) + std::exp(-x)); }
};
struct Neg {
  static constexpr bool kInts = true;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return wrapSub(0, x);
    } else {
      return -x;
    }
  }
};
struct Erf {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::erf(x); }
};
struct Sqrt {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::sqrt(x); }
};
struct Reciprocal {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return C(1) / x; }
};
struct Log {
  static constexpr bool kInts = false;
  template <class C> C operator()(C x) const { return std::log(x); }
};
struct Abs {
  static constexpr bool kInts = true;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return x < 0 ? wrapSub(0, x) : x;
    } else {
      return std::fabs(x);
    }
  }
};

// Unary kernels with float params (floats only). Bounds and values are
// doubles; each element computes in its compute type C, as the other kernels.
struct Clip {
  static constexpr bool kInts = false;
  double lo;
  double hi;
  explicit Clip(const KernelCall& call)
      : lo(floatParam(call.op, "min")), hi(floatParam(call.op, "max")) {}
  // In double, so that a bound beyond C's range (the defaults) compares
  // exactly; NaN fails both tests and stays NaN.
  template <class C> C operator()(C x) const {
    const double v = static_cast<double>(x);
    return v < lo ? static_cast<C>(lo) : v > hi ? static_cast<C>(hi) : x;
  }
};
struct ScalarValue {
  static constexpr bool kInts = false;
  double value;
  explicit ScalarValue(const KernelCall& call) : value(floatParam(call.op, "value")) {}
};
struct AddScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  template <class C> C operator()(C x) const { return x + static_cast<C>(value); }
};
struct MulScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  template <class C> C operator()(C x) const { return x * static_cast<C>(value); }
};
struct RsubScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  template <class C> C operator()(C x) const { return static_cast<C>(value) - x; }
};
struct RdivScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  template <class C> C operator()(C x) const { return static_cast<C>(value) / x; }
};
struct PowScalar : ScalarValue {
  using ScalarValue::ScalarValue;
  template <class C> C operator()(C x) const { return std::pow(x, static_cast<C>(value)); }
};

struct Add {
  static constexpr bool kInts = true;
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
  template <class C> C operator()(C a, C b) const { return a / b; }
};
struct Pow {
  static constexpr bool kInts = false;
  template <class C> C operator()(C a, C b) const { return std::pow(a, b); }
};

template <class T, class Op> void unaryTyped(const KernelCall& call, const Op& op) {
  mapElements<T, T>(call, [&](T x) { return Num<T>::store(op(Num<T>::load(x))); });
}

template <class T, class Op> void binaryTyped(const KernelCall& call) {
  const Walk a = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const Walk b = walkThrough(call.inputs[1][0], inputIpf(call, 1), call.index);
  const Walk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  const T* pa = a.ptr<T>();
  const T* pb = b.ptr<T>();
  T* pr = r.ptr<T>();
  const Op op;
  forEachRun<3>(call.index, {&a, &b, &r},
                [&](const std::array<std::int64_t, 3>& off, std::int64_t n,
                    const std::array<std::int64_t, 3>& st) {
                  const T* xa = pa + off[0];
                  const T* xb = pb + off[1];
                  T* y = pr + off[2];
                  if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
                    for (std::int64_t j = 0; j < n; ++j) {
                      y[j] = Num<T>::store(op(Num<T>::load(xa[j]), Num<T>::load(xb[j])));
                    }
                  } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
                    const auto vb = Num<T>::load(*xb);
                    for (std::int64_t j = 0; j < n; ++j) {
                      y[j] = Num<T>::store(op(Num<T>::load(xa[j]), vb));
                    }
                  } else if (st[0] == 0 && st[1] == 1 && st[2] == 1) {
                    const auto va = Num<T>::load(*xa);
                    for (std::int64_t j = 0; j < n; ++j) {
                      y[j] = Num<T>::store(op(va, Num<T>::load(xb[j])));
                    }
                  } else {
                    for (std::int64_t j = 0; j < n; ++j) {
                      y[j * st[2]] = Num<T>::store(
                          op(Num<T>::load(xa[j * st[0]]), Num<T>::load(xb[j * st[1]])));
                    }
                  }
                });
}

template <class Op> void unaryKernel(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T> && !Op::kInts) {
      unsupportedDType(call, dtype);
    } else {
      unaryTyped<T, Op>(call, Op{});
    }
  });
}

// A unary kernel whose op reads the call's float params (clip, *_scalar).
template <class Op> void paramKernel(const KernelCall& call) {
  dispatchFloat(call, [&](auto tag) {
    using T = typename decltype(tag)::type;
    unaryTyped<T, Op>(call, Op(call));
  });
}

template <class Op> void binaryKernel(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  if (call.inputs[0][0].dtype != dtype || call.inputs[1][0].dtype != dtype) {
    unsupportedDType(call, call.inputs[0][0].dtype == dtype ? call.inputs[1][0].dtype
                                                            : call.inputs[0][0].dtype);
  }
  dispatch(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsInt<T> && !Op::kInts) {
      unsupportedDType(call, dtype);
    } else {
      binaryTyped<T, Op>(call);
    }
  });
}

// where: result = condition ? X : Y. It only selects, so X and Y are copied as
// stored (any dtype, bit for bit); the four operands share one walk.
template <class T> void whereTyped(const KernelCall& call) {
  const Walk c = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const Walk x = walkThrough(call.inputs[1][0], inputIpf(call, 1), call.index);
  const Walk y = walkThrough(call.inputs[2][0], inputIpf(call, 2), call.index);
  const Walk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  const Bool* pc = c.ptr<Bool>();
  const T* px = x.ptr<T>();
  const T* py = y.ptr<T>();
  T* pr = r.ptr<T>();
  forEachRun<4>(call.index, {&c, &x, &y, &r},
                [&](const std::array<std::int64_t, 4>& off, std::int64_t n,
                    const std::array<std::int64_t, 4>& st) {
                  const Bool* cs = pc + off[0];
                  const T* xs = px + off[1];
                  const T* ys = py + off[2];
                  T* rs = pr + off[3];
                  if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
                    for (std::int64_t j = 0; j < n; ++j) {
                      rs[j] = cs[j].bits != 0 ? xs[j] : ys[j];
                    }
                  } else {
                    for (std::int64_t j = 0; j < n; ++j) {
                      rs[j * st[3]] = cs[j * st[0]].bits != 0 ? xs[j * st[1]] : ys[j * st[2]];
                    }
                  }
                });
}

void whereKernel(const KernelCall& call) {
  const DType dtype = call.outputs[0][0].dtype;
  if (const std::optional<DType> bad = backend::whereOperandMismatch(call)) {
    unsupportedDType(call, *bad);
  }
  dispatch(dtype, [&](auto tag) { whereTyped<typename decltype(tag)::type>(call); });
}

} // namespace

void registerElementwiseKernels(CpuRegistry& registry) {
  registry.add("relu", &unaryKernel<Relu>);
  registry.add("gelu", &unaryKernel<Gelu>);
  registry.add("tanh", &unaryKernel<Tanh>);
  registry.add("exp", &unaryKernel<Exp>);
  registry.add("sigmoid", &unaryKernel<Sigmoid>);
  registry.add("neg", &unaryKernel<Neg>);
  registry.add("add", &binaryKernel<Add>);
  registry.add("sub", &binaryKernel<Sub>);
  registry.add("mul", &binaryKernel<Mul>);
  registry.add("div", &binaryKernel<Div>);
  registry.add("erf", &unaryKernel<Erf>);
  registry.add("sqrt", &unaryKernel<Sqrt>);
  registry.add("reciprocal", &unaryKernel<Reciprocal>);
  registry.add("log", &unaryKernel<Log>);
  registry.add("abs", &unaryKernel<Abs>);
  registry.add("clip", &paramKernel<Clip>);
  registry.add("add_scalar", &paramKernel<AddScalar>);
  registry.add("mul_scalar", &paramKernel<MulScalar>);
  registry.add("rsub_scalar", &paramKernel<RsubScalar>);
  registry.add("rdiv_scalar", &paramKernel<RdivScalar>);
  registry.add("pow_scalar", &paramKernel<PowScalar>);
  registry.add("pow", &binaryKernel<Pow>);
  registry.add("where", &whereKernel);
}

} // namespace tapestry::backend::cpu
