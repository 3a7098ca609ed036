// Elementwise kernels: relu, gelu, tanh, exp, sigmoid, neg (unary) and add,
// sub, mul, div (binary, NumPy broadcasting). Every operand is walked through
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

template <class T, class Op> void unaryTyped(const KernelCall& call) {
  const Walk a = walkThrough(call.inputs[0][0], inputIpf(call, 0), call.index);
  const Walk r = walkThrough(call.outputs[0][0], outputIpf(call, 0), call.index);
  const T* x = a.ptr<T>();
  T* y = r.ptr<T>();
  const Op op;
  forEachRun<2>(call.index, {&a, &r},
                [&](const std::array<std::int64_t, 2>& off, std::int64_t n,
                    const std::array<std::int64_t, 2>& st) {
                  const T* xs = x + off[0];
                  T* ys = y + off[1];
                  if (st[0] == 1 && st[1] == 1) {
                    for (std::int64_t j = 0; j < n; ++j) {
                      ys[j] = Num<T>::store(op(Num<T>::load(xs[j])));
                    }
                  } else {
                    for (std::int64_t j = 0; j < n; ++j) {
                      ys[j * st[1]] = Num<T>::store(op(Num<T>::load(xs[j * st[0]])));
                    }
                  }
                });
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
      unaryTyped<T, Op>(call);
    }
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
}

} // namespace tapestry::backend::cpu
