// The native kernels of the CUDA backend (see kernels.hpp). Each mirrors its
// CPU counterpart in backends/cpu/: the same compute types (float for float32
// and the 16-bit floats, double, int64 for integers), the same rounding on
// store (nearest even), wrapping integer arithmetic, NaN-propagating max/min,
// and, where the CPU sums sequentially (reductions), the same order. Kernels
// are templated on the element type only; the operation is a runtime switch,
// which keeps the number of instantiations (and compile time) small.
#include "backends/cuda/device_walk.cuh"
#include "backends/cuda/kernels.hpp"

#include <cstdint>
#include <type_traits>

#include "backends/cuda/device_util.cuh"

namespace tapestry::cuda {

namespace {

__device__ inline i64 wrapAdd(i64 a, i64 b) {
  return static_cast<i64>(static_cast<u64>(a) + static_cast<u64>(b));
}
__device__ inline i64 wrapSub(i64 a, i64 b) {
  return static_cast<i64>(static_cast<u64>(a) - static_cast<u64>(b));
}
__device__ inline i64 wrapMul(i64 a, i64 b) {
  return static_cast<i64>(static_cast<u64>(a) * static_cast<u64>(b));
}

__device__ inline float mathErf(float x) {
  return erff(x);
}
__device__ inline double mathErf(double x) {
  return erf(x);
}
__device__ inline float mathTanh(float x) {
  return tanhf(x);
}
__device__ inline double mathTanh(double x) {
  return tanh(x);
}
__device__ inline float mathSqrt(float x) {
  return sqrtf(x);
}
__device__ inline double mathSqrt(double x) {
  return sqrt(x);
}
__device__ inline float mathLog(float x) {
  return logf(x);
}
__device__ inline double mathLog(double x) {
  return log(x);
}
__device__ inline float mathAbs(float x) {
  return fabsf(x);
}
__device__ inline double mathAbs(double x) {
  return fabs(x);
}
__device__ inline float mathPow(float a, float b) {
  return powf(a, b);
}
__device__ inline double mathPow(double a, double b) {
  return pow(a, b);
}

// ---------------------------------------------------------------- elementwise

// The unary ops only kernel bodies use, in double (as the host evaluator).
__device__ inline double applyBodyUnary(UnaryOp op, double x) {
  switch (op) {
  case UnaryOp::Floor:
    return floor(x);
  case UnaryOp::Ceil:
    return ceil(x);
  case UnaryOp::Round:
    return rint(x);
  case UnaryOp::Sign:
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
  case UnaryOp::Sin:
    return sin(x);
  case UnaryOp::Cos:
    return cos(x);
  case UnaryOp::Tan:
    return tan(x);
  case UnaryOp::Asin:
    return asin(x);
  case UnaryOp::Acos:
    return acos(x);
  case UnaryOp::Atan:
    return atan(x);
  case UnaryOp::Sinh:
    return sinh(x);
  case UnaryOp::Cosh:
    return cosh(x);
  case UnaryOp::Asinh:
    return asinh(x);
  case UnaryOp::Acosh:
    return acosh(x);
  case UnaryOp::Atanh:
    return atanh(x);
  case UnaryOp::IsNan:
    return isnan(x) ? 1.0 : 0.0;
  case UnaryOp::IsInf:
    return isinf(x) ? 1.0 : 0.0;
  case UnaryOp::Not:
    return x == 0 ? 1.0 : 0.0;
  default:
    break;
  }
  return x;
}

// The binary ops only kernel bodies use, in double (as the host evaluator).
__device__ inline double applyBodyBinary(BinaryOp op, double a, double b) {
  switch (op) {
  case BinaryOp::Mod: {
    const double r = fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  }
  case BinaryOp::Fmod:
    return fmod(a, b);
  case BinaryOp::Equal:
    return a == b ? 1.0 : 0.0;
  case BinaryOp::Less:
    return a < b ? 1.0 : 0.0;
  case BinaryOp::LessEqual:
    return a <= b ? 1.0 : 0.0;
  case BinaryOp::Greater:
    return a > b ? 1.0 : 0.0;
  case BinaryOp::GreaterEqual:
    return a >= b ? 1.0 : 0.0;
  case BinaryOp::And:
    return a != 0 && b != 0 ? 1.0 : 0.0;
  case BinaryOp::Or:
    return a != 0 || b != 0 ? 1.0 : 0.0;
  case BinaryOp::Xor:
    return (a != 0) != (b != 0) ? 1.0 : 0.0;
  default:
    break;
  }
  return 0;
}

template <class C> __device__ C applyUnary(UnaryOp op, C x, double p0, double p1) {
  if constexpr (kIsInt<C>) {
    // Only relu, neg and abs accept integers (the host rejects the rest).
    if (op == UnaryOp::Neg || (op == UnaryOp::Abs && x < C(0))) {
      return wrapSub(0, x);
    }
    if (op == UnaryOp::Abs) {
      return x;
    }
    return x < C(0) ? C(0) : x;
  } else {
    switch (op) {
    case UnaryOp::Relu:
      return x < C(0) ? C(0) : x; // NaN stays NaN
    case UnaryOp::Gelu:
      return C(0.5) * x * (C(1) + mathErf(x * C(0.70710678118654752440)));
    case UnaryOp::Tanh:
      return mathTanh(x);
    case UnaryOp::GeluTanh:
      return C(0.5) * x *
             (C(1) + mathTanh(C(0.79788456080286535588) * (x + C(0.044715) * x * x * x)));
    case UnaryOp::Exp:
      return mathExp(x);
    case UnaryOp::Sigmoid:
      return C(1) / (C(1) + mathExp(-x));
    case UnaryOp::Silu:
      return x * (C(1) / (C(1) + mathExp(-x)));
    case UnaryOp::Erf:
      return mathErf(x);
    case UnaryOp::Sqrt:
      return mathSqrt(x);
    case UnaryOp::Reciprocal:
      return C(1) / x;
    case UnaryOp::Log:
      return mathLog(x);
    case UnaryOp::Abs:
      return mathAbs(x);
    case UnaryOp::Clip: { // in double, as the CPU backend: NaN fails both tests
      const double v = static_cast<double>(x);
      return v < p0 ? static_cast<C>(p0) : v > p1 ? static_cast<C>(p1) : x;
    }
    case UnaryOp::AddScalar:
      return x + static_cast<C>(p0);
    case UnaryOp::MulScalar:
      return x * static_cast<C>(p0);
    case UnaryOp::RsubScalar:
      return static_cast<C>(p0) - x;
    case UnaryOp::RdivScalar:
      return static_cast<C>(p0) / x;
    case UnaryOp::PowScalar:
      return mathPow(x, static_cast<C>(p0));
    case UnaryOp::DivScalar:
      return x / static_cast<C>(p0);
    case UnaryOp::Neg:
      break;
    default: // the body-only ops compute in double, then round to C
      return static_cast<C>(applyBodyUnary(op, static_cast<double>(x)));
    }
    return -x;
  }
}

template <class C> __device__ C applyBinary(BinaryOp op, C a, C b) {
  if constexpr (kIsInt<C>) {
    switch (op) {
    case BinaryOp::Add:
      return wrapAdd(a, b);
    case BinaryOp::Sub:
      return wrapSub(a, b);
    case BinaryOp::Mul:
      return wrapMul(a, b);
    default:
      break; // rejected on the host
    }
    return 0;
  } else {
    switch (op) {
    case BinaryOp::Add:
      return a + b;
    case BinaryOp::Sub:
      return a - b;
    case BinaryOp::Mul:
      return a * b;
    case BinaryOp::Pow:
      return mathPow(a, b);
    case BinaryOp::Div:
      break;
    default:
      return static_cast<C>(applyBodyBinary(op, static_cast<double>(a), static_cast<double>(b)));
    }
    return a / b;
  }
}

template <class C> __device__ C applyCombine(CombineOp op, C a, C b) {
  switch (op) {
  case CombineOp::Sum:
    if constexpr (kIsInt<C>) {
      return wrapAdd(a, b);
    } else {
      return a + b;
    }
  case CombineOp::Prod:
    if constexpr (kIsInt<C>) {
      return wrapMul(a, b);
    } else {
      return a * b;
    }
  case CombineOp::Max:
    if constexpr (!kIsInt<C>) {
      if (isnan(a) || isnan(b)) {
        return isnan(a) ? a : b;
      }
    }
    return a < b ? b : a;
  case CombineOp::Min:
    break;
  }
  if constexpr (!kIsInt<C>) {
    if (isnan(a) || isnan(b)) {
      return isnan(a) ? a : b;
    }
  }
  return b < a ? b : a;
}

template <class T> __device__ typename Num<T>::C identityOf(CombineOp op) {
  using C = typename Num<T>::C;
  switch (op) {
  case CombineOp::Sum:
    return C(0);
  case CombineOp::Prod:
    return C(1);
  case CombineOp::Max:
    if constexpr (std::is_same<T, std::int32_t>::value) {
      return INT32_MIN;
    } else if constexpr (std::is_same<T, std::int64_t>::value) {
      return INT64_MIN;
    } else {
      return -C(INFINITY);
    }
  case CombineOp::Min:
    break;
  }
  if constexpr (std::is_same<T, std::int32_t>::value) {
    return INT32_MAX;
  } else if constexpr (std::is_same<T, std::int64_t>::value) {
    return INT64_MAX;
  } else {
    return C(INFINITY);
  }
}

template <class T>
__global__ void unaryKernel(UnaryOp op, const T* x, T* y, DeviceWalk w, double p0, double p1) {
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[2];
    walkOffsets<2>(w, i, off);
    y[off[1]] = Num<T>::store(applyUnary(op, Num<T>::load(x[off[0]]), p0, p1));
  }
}

template <class T>
__global__ void binaryKernel(BinaryOp op, const T* a, const T* b, T* y, DeviceWalk w) {
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[3];
    walkOffsets<3>(w, i, off);
    y[off[2]] = Num<T>::store(applyBinary(op, Num<T>::load(a[off[0]]), Num<T>::load(b[off[1]])));
  }
}

template <class T>
__global__ void epilogueKernel(T* y, const T* residual, DeviceWalk w, EpilogueAct act, double lo,
                               double hi) {
  using C = typename Num<T>::C;
  const bool clips = lo > -INFINITY || hi < INFINITY;
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[2];
    walkOffsets<2>(w, i, off);
    C v = Num<T>::load(y[off[0]]);
    if (residual != nullptr) {
      v += Num<T>::load(residual[off[1]]);
    }
    if (act == EpilogueAct::Gelu) {
      v = applyUnary(UnaryOp::Gelu, v, 0, 0);
    } else if (act == EpilogueAct::GeluTanh) {
      v = applyUnary(UnaryOp::GeluTanh, v, 0, 0);
    } else {
      v = epilogueActivation(act, v); // silu, hard_swish (device_util.cuh)
    }
    if (clips) {
      const double d = static_cast<double>(v);
      const double t = d < lo ? lo : d;
      v = static_cast<C>(hi < t ? hi : t);
    }
    y[off[0]] = Num<T>::store(v);
  }
}

template <class T> __global__ void combineKernel(CombineOp op, T* dst, const T* src, DeviceWalk w) {
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[2];
    walkOffsets<2>(w, i, off);
    T& slot = dst[off[0]];
    slot = Num<T>::store(applyCombine(op, Num<T>::load(slot), Num<T>::load(src[off[1]])));
  }
}

template <class T> __global__ void fillIdentityKernel(CombineOp op, T* dst, DeviceWalk w) {
  const T value = Num<T>::store(identityOf<T>(op));
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[1];
    walkOffsets<1>(w, i, off);
    dst[off[0]] = value;
  }
}

template <class T> __global__ void copyKernel(const T* x, T* y, DeviceWalk w) {
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[2];
    walkOffsets<2>(w, i, off);
    y[off[1]] = x[off[0]];
  }
}

// convertValue of backends/cpu/kernel_util.hpp: floats round to nearest even
// (through float32 for the 16-bit floats); float to int truncates toward zero
// and saturates (NaN gives 0); int to narrower int wraps; to bool is nonzero
// (NaN too), from bool 0 or 1.
template <class To, class From> __device__ To convertValue(From x) {
  using CF = typename Num<From>::C;
  using CT = typename Num<To>::C;
  const CF v = Num<From>::load(x);
  if constexpr (kIsInt<To> && !kIsInt<From> && !std::is_same<From, Bool8>::value) {
    if (isnan(v)) {
      return To{0};
    }
    const double lo =
        std::is_same<To, std::int32_t>::value ? -2147483648.0 : -9223372036854775808.0;
    const double hi = std::is_same<To, std::int32_t>::value ? 2147483647.0 : 9223372036854775808.0;
    const double d = static_cast<double>(v);
    if (d <= lo) {
      return std::is_same<To, std::int32_t>::value ? To(INT32_MIN) : To(INT64_MIN);
    }
    if (d >= hi) {
      return std::is_same<To, std::int32_t>::value ? To(INT32_MAX) : To(INT64_MAX);
    }
    return static_cast<To>(static_cast<i64>(d));
  } else {
    return Num<To>::store(static_cast<CT>(v));
  }
}

template <class From, class To> __global__ void castKernel(const From* x, To* y, DeviceWalk w) {
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[2];
    walkOffsets<2>(w, i, off);
    y[off[1]] = convertValue<To, From>(x[off[0]]);
  }
}

// ---------------------------------------------------------------- reductions

template <class T>
__global__ void reduceKernel(ReduceOp op, const T* x, T* y, DeviceWalk w, i64 length, i64 sx,
                             i64 divisor) {
  using C = typename Num<T>::C;
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[2];
    walkOffsets<2>(w, i, off);
    const T* row = x + off[0];
    C acc = op == ReduceOp::Prod ? C(1) : C(0);
    if (op == ReduceOp::Max) { // the compute type's lowest, as the CPU backend
      if constexpr (kIsInt<C>) {
        acc = INT64_MIN;
      } else {
        acc = -C(INFINITY);
      }
    } else if (op == ReduceOp::Min) { // and its highest
      if constexpr (kIsInt<C>) {
        acc = INT64_MAX;
      } else {
        acc = C(INFINITY);
      }
    }
    for (i64 j = 0; j < length; ++j) {
      const C v = Num<T>::load(row[j * sx]);
      if (op == ReduceOp::Max) {
        if constexpr (kIsInt<C>) {
          acc = v > acc ? v : acc;
        } else if (v > acc || isnan(v)) { // NaN propagates
          acc = v;
        }
      } else if (op == ReduceOp::Min) {
        if constexpr (kIsInt<C>) {
          acc = v < acc ? v : acc;
        } else if (v < acc || isnan(v)) {
          acc = v;
        }
      } else if (op == ReduceOp::Prod) {
        if constexpr (kIsInt<C>) {
          acc = static_cast<C>(static_cast<unsigned long long>(acc) *
                               static_cast<unsigned long long>(v)); // wraps, as the CPU backend
        } else {
          acc *= v;
        }
      } else if constexpr (kIsInt<C>) {
        acc = wrapAdd(acc, v);
      } else {
        acc += v;
      }
    }
    if constexpr (!kIsInt<C>) {
      if (op == ReduceOp::Mean) {
        acc = acc / static_cast<C>(divisor);
      }
    }
    y[off[1]] = Num<T>::store(acc);
  }
}

// ---------------------------------------------------------------- softmax, layernorm

template <class C> __device__ C warpMax(C v) { // NaN propagates
  for (int lane = 16; lane > 0; lane /= 2) {
    const C o = __shfl_xor_sync(0xffffffffu, v, lane);
    v = (o > v || isnan(o)) ? o : v;
  }
  return v;
}
template <class C> __device__ C warpSum(C v) {
  for (int lane = 16; lane > 0; lane /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, lane);
  }
  return v;
}

template <class T>
__global__ void softmaxKernel(const T* x, T* y, DeviceWalk w, i64 n, i64 sx, i64 sy) {
  using C = typename Num<T>::C;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const i64 firstWarp = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const i64 warps = static_cast<i64>(gridDim.x) * blockDim.x / 32;
  for (i64 r = firstWarp; r < w.count; r += warps) { // uniform per warp
    i64 off[2];
    walkOffsets<2>(w, r, off);
    const T* row = x + off[0];
    T* out = y + off[1];
    C m = -C(INFINITY);
    for (i64 i = lane; i < n; i += 32) {
      const C v = Num<T>::load(row[i * sx]);
      m = (v > m || isnan(v)) ? v : m;
    }
    m = warpMax(m);
    C total = 0;
    for (i64 i = lane; i < n; i += 32) {
      total += mathExp(Num<T>::load(row[i * sx]) - m);
    }
    total = warpSum(total);
    for (i64 i = lane; i < n; i += 32) {
      out[i * sy] = Num<T>::store(mathExp(Num<T>::load(row[i * sx]) - m) / total);
    }
  }
}

// layernorm, or rmsnorm without beta (null): no centring, no shift.
template <class T>
__global__ void layernormKernel(const T* x, T* y, const T* gamma, i64 gs, const T* beta, i64 bs,
                                DeviceWalk w, i64 d, i64 sx, i64 sy, double eps) {
  using C = typename Num<T>::C;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const i64 firstWarp = (static_cast<i64>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const i64 warps = static_cast<i64>(gridDim.x) * blockDim.x / 32;
  for (i64 r = firstWarp; r < w.count; r += warps) {
    i64 off[2];
    walkOffsets<2>(w, r, off);
    const T* row = x + off[0];
    T* out = y + off[1];
    double sum = 0;
    for (i64 i = lane; i < d && beta != nullptr; i += 32) {
      sum += static_cast<double>(Num<T>::load(row[i * sx]));
    }
    const double mean = beta != nullptr ? warpSum(sum) / static_cast<double>(d) : 0.0;
    double sq = 0;
    for (i64 i = lane; i < d; i += 32) {
      const double c = static_cast<double>(Num<T>::load(row[i * sx])) - mean;
      sq += c * c;
    }
    const double inv = 1.0 / sqrt(warpSum(sq) / static_cast<double>(d) + eps);
    for (i64 i = lane; i < d; i += 32) {
      const C norm = static_cast<C>((static_cast<double>(Num<T>::load(row[i * sx])) - mean) * inv);
      const C shift = beta != nullptr ? Num<T>::load(beta[i * bs]) : C(0);
      out[i * sy] = Num<T>::store(norm * Num<T>::load(gamma[i * gs]) + shift);
    }
  }
}

// ---------------------------------------------------------------- embedding, matmul, conv

template <class T, class I>
__global__ void embeddingKernel(const T* table, i64 rowStride, i64 rows, const I* indices, T* out,
                                DeviceWalk w, unsigned long long* bad, bool wrapNegative) {
  TAPESTRY_GRID_LOOP(i, w.count) {
    i64 off[3];
    walkOffsets<3>(w, i, off);
    i64 row = static_cast<i64>(indices[off[0]]);
    row = wrapNegative && row < 0 ? row + rows : row;
    if (row < 0 || row >= rows) {
      atomicMin(bad, static_cast<unsigned long long>(i));
      continue;
    }
    out[off[1]] = table[row * rowStride + off[2]];
  }
}

template <class T>
__global__ void simpleMatmulKernel(i64 M, i64 N, i64 K, const T* A, i64 rsA, i64 csA, const T* B,
                                   i64 rsB, i64 csB, T* C, i64 rsC, i64 csC, bool accumulate) {
  using Acc = typename Num<T>::C;
  TAPESTRY_GRID_LOOP(e, M * N) {
    const i64 i = e / N;
    const i64 j = e % N;
    Acc acc = 0;
    for (i64 k = 0; k < K; ++k) {
      const Acc a = Num<T>::load(A[i * rsA + k * csA]);
      const Acc b = Num<T>::load(B[k * rsB + j * csB]);
      if constexpr (kIsInt<Acc>) {
        acc = wrapAdd(acc, wrapMul(a, b));
      } else {
        acc += a * b;
      }
    }
    T& out = C[i * rsC + j * csC];
    if constexpr (!kIsInt<Acc>) {
      if (accumulate) {
        acc += Num<T>::load(out);
      }
    }
    out = Num<T>::store(acc);
  }
}

} // namespace

// ---------------------------------------------------------------- launchers

cudaError_t launchUnary(UnaryOp op, ElementType type, const void* x, void* y, const DeviceWalk& w,
                        cudaStream_t stream, double p0, double p1) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    unaryKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(op, static_cast<const T*>(x),
                                                                static_cast<T*>(y), w, p0, p1);
    return cudaGetLastError();
  });
}

cudaError_t launchBinary(BinaryOp op, ElementType type, const void* a, const void* b, void* y,
                         const DeviceWalk& w, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    binaryKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(
        op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), w);
    return cudaGetLastError();
  });
}

cudaError_t launchEpilogue(ElementType type, void* y, const void* residual, const DeviceWalk& w,
                           EpilogueAct act, double lo, double hi, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    epilogueKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(residual), w, act, lo, hi);
    return cudaGetLastError();
  });
}

cudaError_t launchCast(ElementType from, ElementType to, const void* x, void* y,
                       const DeviceWalk& w, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatchWithBool(from, [&](auto fromTag) {
    using F = typename decltype(fromTag)::type;
    return dispatchWithBool(to, [&](auto toTag) {
      using T = typename decltype(toTag)::type;
      castKernel<F, T><<<blocksFor(w.count), kThreads, 0, stream>>>(static_cast<const F*>(x),
                                                                    static_cast<T*>(y), w);
      return cudaGetLastError();
    });
  });
}

cudaError_t launchCopy(int elementSize, const void* x, void* y, const DeviceWalk& w,
                       cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  const unsigned blocks = blocksFor(w.count);
  switch (elementSize) {
  case 1:
    copyKernel<std::uint8_t><<<blocks, kThreads, 0, stream>>>(static_cast<const std::uint8_t*>(x),
                                                              static_cast<std::uint8_t*>(y), w);
    break;
  case 2:
    copyKernel<std::uint16_t><<<blocks, kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(x),
                                                               static_cast<std::uint16_t*>(y), w);
    break;
  case 4:
    copyKernel<std::uint32_t><<<blocks, kThreads, 0, stream>>>(static_cast<const std::uint32_t*>(x),
                                                               static_cast<std::uint32_t*>(y), w);
    break;
  case 8:
    copyKernel<std::uint64_t><<<blocks, kThreads, 0, stream>>>(static_cast<const std::uint64_t*>(x),
                                                               static_cast<std::uint64_t*>(y), w);
    break;
  default:
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchCombine(CombineOp op, ElementType type, void* dst, const void* src,
                          const DeviceWalk& w, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    combineKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(op, static_cast<T*>(dst),
                                                                  static_cast<const T*>(src), w);
    return cudaGetLastError();
  });
}

cudaError_t launchFillIdentity(CombineOp op, ElementType type, void* dst, const DeviceWalk& w,
                               cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fillIdentityKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(op, static_cast<T*>(dst), w);
    return cudaGetLastError();
  });
}

cudaError_t launchReduce(ReduceOp op, ElementType type, const void* x, void* y, const DeviceWalk& w,
                         std::int64_t axisLength, std::int64_t axisStride, std::int64_t divisor,
                         cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduceKernel<T><<<blocksFor(w.count), kThreads, 0, stream>>>(
        op, static_cast<const T*>(x), static_cast<T*>(y), w, axisLength, axisStride, divisor);
    return cudaGetLastError();
  });
}

cudaError_t launchSoftmax(ElementType type, const void* x, void* y, const DeviceWalk& w,
                          std::int64_t n, std::int64_t sx, std::int64_t sy, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    softmaxKernel<T><<<blocksFor(w.count * 32), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), w, n, sx, sy);
    return cudaGetLastError();
  });
}

cudaError_t launchLayernorm(ElementType type, const void* x, void* y, const void* gamma,
                            std::int64_t gammaStride, const void* beta, std::int64_t betaStride,
                            const DeviceWalk& w, std::int64_t d, std::int64_t sx, std::int64_t sy,
                            double eps, cudaStream_t stream) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  return dispatchFloat(type, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    layernormKernel<T><<<blocksFor(w.count * 32), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), static_cast<const T*>(gamma), gammaStride,
        static_cast<const T*>(beta), betaStride, w, d, sx, sy, eps);
    return cudaGetLastError();
  });
}

cudaError_t launchEmbedding(ElementType type, ElementType indexType, const void* table,
                            std::int64_t tableRowStride, std::int64_t rows, const void* indices,
                            void* out, const DeviceWalk& w, unsigned long long* badPoint,
                            cudaStream_t stream, bool wrapNegative) {
  if (w.count == 0) {
    return cudaSuccess;
  }
  if (indexType != ElementType::Int32 && indexType != ElementType::Int64) {
    return cudaErrorInvalidValue;
  }
  return dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (indexType == ElementType::Int32) {
      embeddingKernel<T, std::int32_t><<<blocksFor(w.count), kThreads, 0, stream>>>(
          static_cast<const T*>(table), tableRowStride, rows,
          static_cast<const std::int32_t*>(indices), static_cast<T*>(out), w, badPoint,
          wrapNegative);
    } else {
      embeddingKernel<T, std::int64_t><<<blocksFor(w.count), kThreads, 0, stream>>>(
          static_cast<const T*>(table), tableRowStride, rows,
          static_cast<const std::int64_t*>(indices), static_cast<T*>(out), w, badPoint,
          wrapNegative);
    }
    return cudaGetLastError();
  });
}

cudaError_t launchSimpleMatmul(ElementType type, std::int64_t M, std::int64_t N, std::int64_t K,
                               const void* A, std::int64_t rsA, std::int64_t csA, const void* B,
                               std::int64_t rsB, std::int64_t csB, void* C, std::int64_t rsC,
                               std::int64_t csC, bool accumulate, cudaStream_t stream) {
  if (M == 0 || N == 0) {
    return cudaSuccess;
  }
  return dispatch(type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    simpleMatmulKernel<T><<<blocksFor(M * N), kThreads, 0, stream>>>(
        M, N, K, static_cast<const T*>(A), rsA, csA, static_cast<const T*>(B), rsB, csB,
        static_cast<T*>(C), rsC, csC, accumulate);
    return cudaGetLastError();
  });
}

} // namespace tapestry::cuda
