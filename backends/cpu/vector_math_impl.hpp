// The loops of vector_math.hpp for one ISA level, included once by each of
// vector_math_sse2.cpp, _avx2.cpp and _avx512.cpp, which define
// TAPESTRY_VM_LEVEL (1, 2, 3) and are compiled with that level's flags.
//
// Everything here has internal linkage (an anonymous namespace) and calls
// nothing inline from other headers but the compiler's intrinsics, so no
// function compiled with AVX-512 instructions can be merged by the linker into
// code that runs on a CPU without them. The loops are written once against
// the level's primitives (vector_isa_impl.hpp: VF, VM, W lanes, vload, vfma,
// ...).
#include <algorithm>
#include <cstdint>

#include "backends/cpu/vector_isa_impl.hpp"
#include "backends/cpu/vector_math.hpp"

namespace tapestry::backend::cpu {

namespace {

// ---------------------------------------------------------------- helpers

constexpr std::int32_t kSign = static_cast<std::int32_t>(0x80000000u);
constexpr float kInf = __builtin_huge_valf();

// The first r (< W) floats of `from` into a W-wide buffer whose other lanes
// hold `pad`, and back.
inline void fill(float* buf, const float* from, std::int64_t r, float pad) {
  for (int l = 0; l < W; ++l) {
    buf[l] = l < r ? from[l] : pad;
  }
}
inline void drain(float* to, const float* buf, std::int64_t r) {
  for (std::int64_t l = 0; l < r; ++l) {
    to[l] = buf[l];
  }
}

// The lanes of v, summed (or max-ed) in a fixed order: a tree, the upper
// half of the lanes onto the lower half until one is left. A store and a
// chain of W scalar adds was ~20 ns a call, most of the time of a row of 16
// (a `mean` over a conv output's rows) and a sixth of a softmax row of 128.
template <class Op> inline float reduceLanes(VF v, Op op) {
#if TAPESTRY_VM_LEVEL == 3
  // The masked extracts: GCC 12's plain ones (and the 256-bit cast) warn on
  // their own undefined source operand.
  const __m512d bits = _mm512_castps_pd(v);
  const __m256 v8 = op(_mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xff, bits, 0)),
                       _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xff, bits, 1)));
  const __m128 v4 = op(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
#elif TAPESTRY_VM_LEVEL == 2
  const __m128 v4 = op(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
#else
  const __m128 v4 = v;
#endif
  const __m128 v2 = op(v4, _mm_movehl_ps(v4, v4));
  return _mm_cvtss_f32(op(v2, _mm_shuffle_ps(v2, v2, 1)));
}
struct LaneAdd {
  __m128 operator()(__m128 a, __m128 b) const { return _mm_add_ps(a, b); }
#if TAPESTRY_VM_LEVEL >= 2
  __m256 operator()(__m256 a, __m256 b) const {
    return _mm256_add_ps(a, b);
  }
#endif
};
struct LaneMax { // a > b ? a : b, as maxps; callers rule out NaN first
  __m128 operator()(__m128 a, __m128 b) const { return _mm_max_ps(a, b); }
#if TAPESTRY_VM_LEVEL >= 2
  __m256 operator()(__m256 a, __m256 b) const {
    return _mm256_max_ps(a, b);
  }
#endif
};
inline float hsum(VF v) {
  return reduceLanes(v, LaneAdd{});
}
inline float hmax(VF v) {
  return reduceLanes(v, LaneMax{});
}

// ---------------------------------------------------------------- unary ops

// Each: VF operator()(VF) const, params p and q as vectors where it has them.
struct Relu {
  VF operator()(VF x) const { return vmaxps(vset(0.0f), x); } // 0 > x ? 0 : x: NaN and -0 stay
};
struct Neg {
  VF operator()(VF x) const { return vbits(x, -1, kSign); }
};
struct Abs {
  VF operator()(VF x) const { return vbits(x, ~kSign, 0); }
};
struct Exp {
  VF operator()(VF x) const { return vexp(x); }
};
struct Log {
  VF operator()(VF x) const { return vlog(x); }
};
struct Tanh {
  VF operator()(VF x) const { return vtanh(x); }
};
// erf's argument held to [-5, 5], NaN kept (vmaxps and vminps return their
// second operand when one is NaN). SLEEF's erff is exactly +-1 from |x| = 4
// at every ISA level, so the results are the same bits; but from |x| of about
// 9 its exp(-x^2) term is subnormal, and each instruction on a subnormal
// takes a microcode assist: gelu of 1M float32s drawn with a deviation of 20
// took 4.3 ms against 2.1 ms with a deviation of 1 (tapestry bench,
// 2026-11-28), and the pre-activations of a product of random weights are
// that wide.
inline VF erfArgument(VF x) {
  return vminps(vset(5.0f), vmaxps(vset(-5.0f), x));
}
struct Erf {
  VF operator()(VF x) const { return verf(erfArgument(x)); }
};
struct Sqrt {
  VF operator()(VF x) const { return vsqrt(x); }
};
struct Reciprocal {
  VF operator()(VF x) const { return vdiv(vset(1.0f), x); }
};
// 1 / (1 + exp(-x)) without overflow: with e = exp(-|x|), 1 / (1 + e) for
// x >= 0 and e / (1 + e) below, so that a result far below 1 keeps its digits
// (sigmoid(-100) is 3.7e-44, not 1 / inf). NaN stays NaN.
struct Sigmoid {
  VF operator()(VF x) const {
    const VF e = vexp(vbits(x, ~kSign, kSign)); // exp(-|x|)
    const VF s = vdiv(vset(1.0f), vadd(vset(1.0f), e));
    return vselect(vgt(vset(0.0f), x), vmul(e, s), s);
  }
};
struct Silu { // x * sigmoid(x), sigmoid as Sigmoid's
  VF operator()(VF x) const { return vmul(x, Sigmoid{}(x)); }
};
struct Gelu { // the exact form: x/2 * (1 + erf(x / sqrt(2)))
  VF operator()(VF x) const {
    const VF e = verf(erfArgument(vmul(x, vset(0.70710678118654752440f))));
    return vmul(vmul(vset(0.5f), x), vadd(vset(1.0f), e));
  }
};
struct GeluTanh { // the tanh approximation: x/2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
  VF operator()(VF x) const {
    const VF inner = vmul(x, vfma(vmul(vset(0.044715f), x), x, vset(1.0f)));
    const VF t = vtanh(vmul(vset(0.79788456080286535588f), inner));
    return vmul(vmul(vset(0.5f), x), vadd(vset(1.0f), t));
  }
};
// std::min(std::max(x, lo), hi) as the float64 reference computes it:
// max(x, lo) is x < lo ? lo : x, i.e. lo > x ? lo : x (NaN stays); then
// hi < t ? hi : t.
struct Clip {
  VF lo, hi;
  VF operator()(VF x) const { return vminps(hi, vmaxps(lo, x)); }
};
// The scalar kernels' order: x * alpha + beta (two roundings), then max with
// 0 and min with 1 as Clip's (NaN stays NaN); HardSwish's x / 6 + 1/2 is
// divided, as the scalar loop's.
struct HardSigmoid {
  VF alpha, beta;
  VF operator()(VF x) const {
    return vminps(vset(1.0f), vmaxps(vset(0.0f), vadd(vmul(x, alpha), beta)));
  }
};
struct HardSwish {
  VF operator()(VF x) const {
    const VF t = vadd(vdiv(x, vset(6.0f)), vset(0.5f));
    return vmul(x, vminps(vset(1.0f), vmaxps(vset(0.0f), t)));
  }
};
struct AddScalar {
  VF v;
  VF operator()(VF x) const { return vadd(x, v); }
};
struct MulScalar {
  VF v;
  VF operator()(VF x) const { return vmul(x, v); }
};
struct RsubScalar {
  VF v;
  VF operator()(VF x) const { return vsub(v, x); }
};
struct RdivScalar {
  VF v;
  VF operator()(VF x) const { return vdiv(v, x); }
};
struct DivScalar {
  VF v;
  VF operator()(VF x) const { return vdiv(x, v); }
};
struct PowScalar {
  VF v;
  VF operator()(VF x) const { return vpow(x, v); }
};
struct Square { // pow(x, 2), exactly x * x (infinities and NaN included)
  VF operator()(VF x) const { return vmul(x, x); }
};

template <class Op> void mapUnary(const float* x, float* y, std::int64_t n, const Op& op) {
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const VF a = vload(x + i);
    const VF b = vload(x + i + W);
    vstore(y + i, op(a));
    vstore(y + i + W, op(b));
  }
  for (; i + W <= n; i += W) {
    vstore(y + i, op(vload(x + i)));
  }
  if (i < n) {
    alignas(64) float buf[W];
    fill(buf, x + i, n - i, 1.0f); // 1: harmless for every op (no log(0), no 1/0)
    vstore(buf, op(vload(buf)));
    drain(y + i, buf, n - i);
  }
}

template <class Op> void unaryPlain(const float* x, float* y, std::int64_t n, float, float) {
  mapUnary(x, y, n, Op{});
}
template <class Op> void unaryOne(const float* x, float* y, std::int64_t n, float p, float) {
  mapUnary(x, y, n, Op{vset(p)});
}
void clip(const float* x, float* y, std::int64_t n, float lo, float hi) {
  mapUnary(x, y, n, Clip{vset(lo), vset(hi)});
}
void hardSigmoid(const float* x, float* y, std::int64_t n, float alpha, float beta) {
  mapUnary(x, y, n, HardSigmoid{vset(alpha), vset(beta)});
}
void powScalar(const float* x, float* y, std::int64_t n, float p, float) {
  if (p == 1.0f) { // pow(x, 1) is x, NaN included
    if (x != y) {
      for (std::int64_t i = 0; i < n; ++i) {
        y[i] = x[i];
      }
    }
  } else if (p == 2.0f) {
    mapUnary(x, y, n, Square{});
  } else {
    mapUnary(x, y, n, PowScalar{vset(p)});
  }
}

// ---------------------------------------------------------------- binary ops

struct Add {
  VF operator()(VF a, VF b) const { return vadd(a, b); }
};
struct Sub {
  VF operator()(VF a, VF b) const { return vsub(a, b); }
};
struct Mul {
  VF operator()(VF a, VF b) const { return vmul(a, b); }
};
struct Div {
  VF operator()(VF a, VF b) const { return vdiv(a, b); }
};
struct Pow {
  VF operator()(VF a, VF b) const { return vpow(a, b); }
};
struct MaxNan {
  VF operator()(VF a, VF b) const { return vselect(vor(vgt(b, a), visnan(b)), b, a); }
};

template <class Op, VScalar kScalar>
void binary(const float* a, const float* b, float* y, std::int64_t n) {
  const Op op;
  auto at = [&](const float* p, bool scalar, std::int64_t i) {
    return scalar ? vset(p[0]) : vload(p + i);
  };
  constexpr bool sa = kScalar == VScalar::A;
  constexpr bool sb = kScalar == VScalar::B;
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const VF a0 = at(a, sa, i);
    const VF b0 = at(b, sb, i);
    const VF a1 = at(a, sa, i + W);
    const VF b1 = at(b, sb, i + W);
    vstore(y + i, op(a0, b0));
    vstore(y + i + W, op(a1, b1));
  }
  for (; i + W <= n; i += W) {
    vstore(y + i, op(at(a, sa, i), at(b, sb, i)));
  }
  if (i < n) {
    alignas(64) float ba[W];
    alignas(64) float bb[W];
    fill(ba, sa ? a : a + i, sa ? 1 : n - i, 1.0f);
    fill(bb, sb ? b : b + i, sb ? 1 : n - i, 1.0f);
    const VF va = sa ? vset(a[0]) : vload(ba);
    const VF vb = sb ? vset(b[0]) : vload(bb);
    vstore(ba, op(va, vb));
    drain(y + i, ba, n - i);
  }
}

// ---------------------------------------------------------------- reductions

float sum(const float* x, std::int64_t n) {
  VF s0 = vset(0.0f);
  VF s1 = s0;
  VF s2 = s0;
  VF s3 = s0;
  std::int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    s0 = vadd(s0, vload(x + i));
    s1 = vadd(s1, vload(x + i + W));
    s2 = vadd(s2, vload(x + i + 2 * W));
    s3 = vadd(s3, vload(x + i + 3 * W));
  }
  for (; i + W <= n; i += W) {
    s0 = vadd(s0, vload(x + i));
  }
  if (i < n) {
    alignas(64) float buf[W];
    fill(buf, x + i, n - i, 0.0f);
    s1 = vadd(s1, vload(buf));
  }
  return hsum(vadd(vadd(s0, s1), vadd(s2, s3)));
}

float dot(const float* a, const float* b, std::int64_t n) {
  VF s0 = vset(0.0f);
  VF s1 = s0;
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    s0 = vadd(s0, vmul(vload(a + i), vload(b + i)));
    s1 = vadd(s1, vmul(vload(a + i + W), vload(b + i + W)));
  }
  for (alignas(64) float bufA[W], bufB[W]; i < n; i += W) {
    fill(bufA, a + i, n - i, 0.0f);
    fill(bufB, b + i, n - i, 0.0f);
    s0 = vadd(s0, vmul(vload(bufA), vload(bufB)));
  }
  return hsum(vadd(s0, s1));
}

float max(const float* x, std::int64_t n) {
  // maxps(m, v) keeps m > v ? m : v; a NaN is noted apart and wins at the end.
  VF m0 = vset(-kInf);
  VF m1 = m0;
  VM nan = vnone();
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const VF a = vload(x + i);
    const VF b = vload(x + i + W);
    m0 = vmaxps(m0, a);
    m1 = vmaxps(m1, b);
    nan = vor(nan, vor(visnan(a), visnan(b)));
  }
  for (; i + W <= n; i += W) {
    const VF a = vload(x + i);
    m0 = vmaxps(m0, a);
    nan = vor(nan, visnan(a));
  }
  if (i < n) {
    alignas(64) float buf[W];
    fill(buf, x + i, n - i, -kInf);
    const VF a = vload(buf);
    m1 = vmaxps(m1, a);
    nan = vor(nan, visnan(a));
  }
  if (vany(nan)) {
    return __builtin_nanf("");
  }
  return hmax(vmaxps(m0, m1));
}

// sum or max of each of `rows` rows, one call for all: a row of 16 is a few
// nanoseconds of work, less than a call through the table per row. A row of
// at most W elements is one vector, reduced inline.
template <bool kMax>
void rowReduce(const float* x, std::int64_t ldx, std::int64_t n, std::int64_t rows, float* y,
               std::int64_t ldy) {
  if (n > 0 && n <= W) {
    alignas(64) float buf[W];
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * ldx;
      VF v;
      if (n == W) {
        v = vload(row);
      } else {
        fill(buf, row, n, kMax ? -kInf : 0.0f);
        v = vload(buf);
      }
      if constexpr (kMax) {
        y[r * ldy] = vany(visnan(v)) ? __builtin_nanf("") : hmax(v);
      } else {
        y[r * ldy] = hsum(v);
      }
    }
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    y[r * ldy] = kMax ? max(x + r * ldx, n) : sum(x + r * ldx, n);
  }
}

// Columns reduced down m rows, kColumnVectors vectors of them held in
// registers through all the rows: folding row by row through memory (a load
// and a store of y per row) took 35 us for a max over 128 rows of [8, 128,
// 192] (testdata/graphs/concat_split_embedding.json's pool).
constexpr int kColumnVectors = 4;
template <class Op>
void columnReduce(const float* x, std::int64_t ldk, std::int64_t m, std::int64_t n, float* y) {
  const Op op;
  std::int64_t j = 0;
  for (; j + kColumnVectors * W <= n; j += kColumnVectors * W) {
    VF acc[kColumnVectors];
    for (int v = 0; v < kColumnVectors; ++v) {
      acc[v] = vload(x + j + v * W);
    }
    for (std::int64_t k = 1; k < m; ++k) {
      const float* row = x + k * ldk + j;
      for (int v = 0; v < kColumnVectors; ++v) {
        acc[v] = op(acc[v], vload(row + v * W));
      }
    }
    for (int v = 0; v < kColumnVectors; ++v) {
      vstore(y + j + v * W, acc[v]);
    }
  }
  for (; j + W <= n; j += W) {
    VF acc = vload(x + j);
    for (std::int64_t k = 1; k < m; ++k) {
      acc = op(acc, vload(x + k * ldk + j));
    }
    vstore(y + j, acc);
  }
  if (j < n) {
    alignas(64) float buf[W];
    fill(buf, x + j, n - j, 0.0f);
    VF acc = vload(buf);
    for (std::int64_t k = 1; k < m; ++k) {
      fill(buf, x + k * ldk + j, n - j, 0.0f);
      acc = op(acc, vload(buf));
    }
    vstore(buf, acc);
    drain(y + j, buf, n - j);
  }
}

void softmax(const float* x, float* y, std::int64_t n) {
  const float m = max(x, n);
  const VF vm = vset(m);
  VF s0 = vset(0.0f);
  VF s1 = s0;
  std::int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const VF e0 = vexp(vsub(vload(x + i), vm));
    const VF e1 = vexp(vsub(vload(x + i + W), vm));
    vstore(y + i, e0);
    vstore(y + i + W, e1);
    s0 = vadd(s0, e0);
    s1 = vadd(s1, e1);
  }
  for (; i + W <= n; i += W) {
    const VF e = vexp(vsub(vload(x + i), vm));
    vstore(y + i, e);
    s0 = vadd(s0, e);
  }
  float tail = 0;
  if (i < n) {
    alignas(64) float buf[W];
    fill(buf, x + i, n - i, m);
    vstore(buf, vexp(vsub(vload(buf), vm)));
    for (std::int64_t l = 0; l < n - i; ++l) {
      tail += buf[l];
    }
    drain(y + i, buf, n - i);
  }
  const float inv = 1.0f / (hsum(vadd(s0, s1)) + tail);
  mapUnary(y, y, n, MulScalar{vset(inv)});
}

// layernorm (Centred) or rmsnorm (beta unused): the mean of squares about
// the mean (or about 0), then the scaled (and shifted) row.
template <bool Centred>
void normRow(const float* x, float* y, std::int64_t n, const float* gamma, const float* beta,
             float eps) {
  const float count = static_cast<float>(n);
  const float mean = Centred ? sum(x, n) / count : 0.0f;
  const VF vmean = vset(mean);
  VF q0 = vset(0.0f);
  VF q1 = q0;
  VF q2 = q0;
  VF q3 = q0;
  std::int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    const VF c0 = vsub(vload(x + i), vmean);
    const VF c1 = vsub(vload(x + i + W), vmean);
    const VF c2 = vsub(vload(x + i + 2 * W), vmean);
    const VF c3 = vsub(vload(x + i + 3 * W), vmean);
    q0 = vadd(q0, vmul(c0, c0));
    q1 = vadd(q1, vmul(c1, c1));
    q2 = vadd(q2, vmul(c2, c2));
    q3 = vadd(q3, vmul(c3, c3));
  }
  for (; i + W <= n; i += W) {
    const VF c = vsub(vload(x + i), vmean);
    q0 = vadd(q0, vmul(c, c));
  }
  if (i < n) {
    alignas(64) float buf[W];
    fill(buf, x + i, n - i, mean); // padding adds 0
    const VF c = vsub(vload(buf), vmean);
    q1 = vadd(q1, vmul(c, c));
  }
  const float var = hsum(vadd(vadd(q0, q1), vadd(q2, q3))) / count;
  const VF inv = vset(1.0f / __builtin_sqrtf(var + eps));
  i = 0;
  for (; i + W <= n; i += W) {
    const VF norm = vmul(vsub(vload(x + i), vmean), inv);
    if constexpr (Centred) {
      vstore(y + i, vadd(vmul(norm, vload(gamma + i)), vload(beta + i)));
    } else {
      vstore(y + i, vmul(norm, vload(gamma + i)));
    }
  }
  if (i < n) {
    alignas(64) float bx[W];
    alignas(64) float bg[W];
    alignas(64) float bb[W];
    fill(bx, x + i, n - i, 0.0f);
    fill(bg, gamma + i, n - i, 0.0f);
    const VF norm = vmul(vsub(vload(bx), vmean), inv);
    if constexpr (Centred) {
      fill(bb, beta + i, n - i, 0.0f);
      vstore(bx, vadd(vmul(norm, vload(bg)), vload(bb)));
    } else {
      vstore(bx, vmul(norm, vload(bg)));
    }
    drain(y + i, bx, n - i);
  }
}

void layernorm(const float* x, float* y, std::int64_t n, const float* gamma, const float* beta,
               float eps) {
  normRow<true>(x, y, n, gamma, beta, eps);
}

void rmsnorm(const float* x, float* y, std::int64_t n, const float* gamma, float eps) {
  normRow<false>(x, y, n, gamma, nullptr, eps);
}

// ---------------------------------------------------------------- transposes

// One register tile of a transposing copy, bitwise (the shuffles move bits,
// never compute on them, so NaN payloads and integers pass unchanged):
// to[a * ts + b] = from[b * fs + a] for a, b < kTile4 (4-byte elements) or
// kTile8 (8-byte). AVX (both wider levels): 8 x 8 and 4 x 4; SSE2: 4 x 4 and 2 x 2.
#if TAPESTRY_VM_LEVEL >= 2
constexpr std::int64_t kTile4 = 8;
constexpr std::int64_t kTile8 = 4;
inline void tile4(const float* from, std::int64_t fs, float* to, std::int64_t ts) {
  __m256 r[8];
  for (int k = 0; k < 8; ++k) {
    r[k] = _mm256_loadu_ps(from + k * fs);
  }
  // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves.
  __m256 u[8];
  for (int k = 0; k < 8; k += 2) {
    u[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    u[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  __m256 v[8];
  for (int k = 0; k < 8; k += 4) {
    v[k] = _mm256_shuffle_ps(u[k], u[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    v[k + 1] = _mm256_shuffle_ps(u[k], u[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    v[k + 2] = _mm256_shuffle_ps(u[k + 1], u[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    v[k + 3] = _mm256_shuffle_ps(u[k + 1], u[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(to + k * ts, _mm256_permute2f128_ps(v[k], v[k + 4], 0x20));
    _mm256_storeu_ps(to + (k + 4) * ts, _mm256_permute2f128_ps(v[k], v[k + 4], 0x31));
  }
}
inline void tile8(const double* from, std::int64_t fs, double* to, std::int64_t ts) {
  __m256d r[4];
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm256_loadu_pd(from + k * fs);
  }
  const __m256d u0 = _mm256_unpacklo_pd(r[0], r[1]);
  const __m256d u1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d u2 = _mm256_unpacklo_pd(r[2], r[3]);
  const __m256d u3 = _mm256_unpackhi_pd(r[2], r[3]);
  _mm256_storeu_pd(to, _mm256_permute2f128_pd(u0, u2, 0x20));
  _mm256_storeu_pd(to + ts, _mm256_permute2f128_pd(u1, u3, 0x20));
  _mm256_storeu_pd(to + 2 * ts, _mm256_permute2f128_pd(u0, u2, 0x31));
  _mm256_storeu_pd(to + 3 * ts, _mm256_permute2f128_pd(u1, u3, 0x31));
}
#else
constexpr std::int64_t kTile4 = 4;
constexpr std::int64_t kTile8 = 2;
inline void tile4(const float* from, std::int64_t fs, float* to, std::int64_t ts) {
  __m128 r0 = _mm_loadu_ps(from);
  __m128 r1 = _mm_loadu_ps(from + fs);
  __m128 r2 = _mm_loadu_ps(from + 2 * fs);
  __m128 r3 = _mm_loadu_ps(from + 3 * fs);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(to, r0);
  _mm_storeu_ps(to + ts, r1);
  _mm_storeu_ps(to + 2 * ts, r2);
  _mm_storeu_ps(to + 3 * ts, r3);
}
inline void tile8(const double* from, std::int64_t fs, double* to, std::int64_t ts) {
  const __m128d r0 = _mm_loadu_pd(from);
  const __m128d r1 = _mm_loadu_pd(from + fs);
  _mm_storeu_pd(to, _mm_unpacklo_pd(r0, r1));
  _mm_storeu_pd(to + ts, _mm_unpackhi_pd(r0, r1));
}
#endif

// The whole copy in blocks of 32 x 32 elements (each block's lines stay in
// L1 while its register tiles use them whole), register tiles inside, and
// the edges element by element as integers of the same size.
template <class F, class I, std::int64_t T, void (*Tile)(const F*, std::int64_t, F*, std::int64_t)>
void transposeCopy(const void* fromBytes, std::int64_t fs, void* toBytes, std::int64_t ts,
                   std::int64_t na, std::int64_t nb) {
  constexpr std::int64_t kBlock = 32;
  const auto* from = static_cast<const F*>(fromBytes);
  auto* to = static_cast<F*>(toBytes);
  const auto* fromI = static_cast<const I*>(fromBytes);
  auto* toI = static_cast<I*>(toBytes);
  for (std::int64_t a0 = 0; a0 < na; a0 += kBlock) {
    const std::int64_t a1 = std::min(na, a0 + kBlock);
    for (std::int64_t b0 = 0; b0 < nb; b0 += kBlock) {
      const std::int64_t b1 = std::min(nb, b0 + kBlock);
      std::int64_t a = a0;
      for (; a + T <= a1; a += T) {
        std::int64_t b = b0;
        for (; b + T <= b1; b += T) {
          Tile(from + b * fs + a, fs, to + a * ts + b, ts);
        }
        for (; b < b1; ++b) {
          for (std::int64_t k = 0; k < T; ++k) {
            toI[(a + k) * ts + b] = fromI[b * fs + a + k];
          }
        }
      }
      for (; a < a1; ++a) {
        for (std::int64_t b = b0; b < b1; ++b) {
          toI[a * ts + b] = fromI[b * fs + a];
        }
      }
    }
  }
}

// ---------------------------------------------------------------- panel products

// Rows of x against W packed in panels of kPanelWidth columns (vector_math.hpp):
// kPanelsAtOnce panels (streams of W) per pass, kPanelRows rows of x, each
// row's accumulators for the panels' columns held in registers, the next
// lines of each panel prefetched kPanelAhead floats ahead (W comes from
// memory: without it two streams ran at 12-13 GB/s on two cores, with it 21,
// against oneDNN's brgconv at 14-16, 2026-12-02).
constexpr int kPanelVectors = kPanelWidth / W;
constexpr int kPanelsAtOnce = W == 16 ? 2 : 1;
constexpr int kPanelRows = W == 16 ? 8 : W == 8 ? 4 : 2;
constexpr std::int64_t kPanelAhead = 1024;

template <int R>
void panelPass(const float* panel, std::int64_t k, const float* x, std::int64_t ldx, float* y,
               std::int64_t ldy) {
  VF acc[R][kPanelsAtOnce][kPanelVectors];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < kPanelsAtOnce; ++q) {
      for (int v = 0; v < kPanelVectors; ++v) {
        acc[r][q][v] = vset(0.0f);
      }
    }
  }
  for (std::int64_t i = 0; i < k; ++i) {
    VF w[kPanelsAtOnce][kPanelVectors];
    for (int q = 0; q < kPanelsAtOnce; ++q) {
      const float* line = panel + (q * k + i) * kPanelWidth;
      _mm_prefetch(reinterpret_cast<const char*>(line + kPanelAhead), _MM_HINT_T0);
      for (int v = 0; v < kPanelVectors; ++v) {
        w[q][v] = vload(line + v * W);
      }
    }
    for (int r = 0; r < R; ++r) {
      const VF xv = vset(x[r * ldx + i]);
      for (int q = 0; q < kPanelsAtOnce; ++q) {
        for (int v = 0; v < kPanelVectors; ++v) {
          acc[r][q][v] = vfma(w[q][v], xv, acc[r][q][v]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < kPanelsAtOnce; ++q) {
      for (int v = 0; v < kPanelVectors; ++v) {
        vstore(y + r * ldy + q * kPanelWidth + v * W, acc[r][q][v]);
      }
    }
  }
}

using PanelPass = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*,
                           std::int64_t);
constexpr PanelPass kPanelPasses[kMaxPanelRows + 1] = {nullptr,       &panelPass<1>, &panelPass<2>,
                                                       &panelPass<3>, &panelPass<4>, &panelPass<5>,
                                                       &panelPass<6>, &panelPass<7>, &panelPass<8>};

void panelProduct(const float* panels, std::int64_t k, std::int64_t first, std::int64_t end,
                  const float* x, std::int64_t ldx, std::int64_t rows, float* y, std::int64_t ldy) {
  for (std::int64_t b = first; b < end; b += kPanelsAtOnce) {
    const float* panel = panels + b * k * kPanelWidth;
    for (std::int64_t r = 0; r < rows; r += kPanelRows) {
      const std::int64_t n = std::min<std::int64_t>(kPanelRows, rows - r);
      kPanelPasses[n](panel, k, x + r * ldx, ldx, y + r * ldy + b * kPanelWidth, ldy);
    }
  }
}

// ---------------------------------------------------------------- the table

template <class Op> constexpr auto binaryModes() {
  using Fn = void (*)(const float*, const float*, float*, std::int64_t);
  struct Modes {
    Fn fn[3];
  };
  return Modes{{&binary<Op, VScalar::None>, &binary<Op, VScalar::A>, &binary<Op, VScalar::B>}};
}

VectorKernels makeTable() {
  VectorKernels t{};
  t.isa = kIsa;
  auto u = [&](VUnary op, void (*fn)(const float*, float*, std::int64_t, float, float)) {
    t.unary[static_cast<int>(op)] = fn;
  };
  u(VUnary::Relu, &unaryPlain<Relu>);
  u(VUnary::Gelu, &unaryPlain<Gelu>);
  u(VUnary::Tanh, &unaryPlain<Tanh>);
  u(VUnary::GeluTanh, &unaryPlain<GeluTanh>);
  u(VUnary::Silu, &unaryPlain<Silu>);
  u(VUnary::HardSigmoid, &hardSigmoid);
  u(VUnary::HardSwish, &unaryPlain<HardSwish>);
  u(VUnary::Exp, &unaryPlain<Exp>);
  u(VUnary::Sigmoid, &unaryPlain<Sigmoid>);
  u(VUnary::Neg, &unaryPlain<Neg>);
  u(VUnary::Erf, &unaryPlain<Erf>);
  u(VUnary::Sqrt, &unaryPlain<Sqrt>);
  u(VUnary::Reciprocal, &unaryPlain<Reciprocal>);
  u(VUnary::Log, &unaryPlain<Log>);
  u(VUnary::Abs, &unaryPlain<Abs>);
  u(VUnary::Clip, &clip);
  u(VUnary::AddScalar, &unaryOne<AddScalar>);
  u(VUnary::MulScalar, &unaryOne<MulScalar>);
  u(VUnary::RsubScalar, &unaryOne<RsubScalar>);
  u(VUnary::RdivScalar, &unaryOne<RdivScalar>);
  u(VUnary::PowScalar, &powScalar);
  u(VUnary::DivScalar, &unaryOne<DivScalar>);
  auto b = [&](VBinary op, auto modes) {
    for (int m = 0; m < 3; ++m) {
      t.binary[static_cast<int>(op)][m] = modes.fn[m];
    }
  };
  b(VBinary::Add, binaryModes<Add>());
  b(VBinary::Sub, binaryModes<Sub>());
  b(VBinary::Mul, binaryModes<Mul>());
  b(VBinary::Div, binaryModes<Div>());
  b(VBinary::Pow, binaryModes<Pow>());
  b(VBinary::MaxNan, binaryModes<MaxNan>());
  t.sum = &sum;
  t.max = &max;
  t.dot = &dot;
  t.rowSums = &rowReduce<false>;
  t.rowMaxes = &rowReduce<true>;
  t.columnSums = &columnReduce<Add>;
  t.columnMaxes = &columnReduce<MaxNan>;
  t.panelProduct = &panelProduct;
  t.softmax = &softmax;
  t.layernorm = &layernorm;
  t.rmsnorm = &rmsnorm;
  t.transpose4 = &transposeCopy<float, std::uint32_t, kTile4, &tile4>;
  t.transpose8 = &transposeCopy<double, std::uint64_t, kTile8, &tile8>;
  return t;
}

} // namespace

const VectorKernels& TAPESTRY_VM_TABLE() {
  static const VectorKernels table = makeTable();
  return table;
}

} // namespace tapestry::backend::cpu
