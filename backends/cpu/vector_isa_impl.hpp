// The vector primitives of one ISA level, for the loops compiled once per
// level (vector_math_impl.hpp): included by a file that defines
// TAPESTRY_VM_LEVEL (1 sse2, 2 avx2, 3 avx512) and is compiled with that
// level's flags. Per level: VF (a float vector), VM (a lane mask), W lanes,
// and the primitives; internal linkage (an anonymous namespace), calling
// nothing inline from other headers but the compiler's intrinsics and SLEEF.
// Not a public header.
#pragma once

#include <cstdint>

#include <immintrin.h>
#include <sleef.h>

#include "backends/cpu/cpu_isa.hpp"

#ifndef TAPESTRY_VM_LEVEL
#error "define TAPESTRY_VM_LEVEL (1 sse2, 2 avx2, 3 avx512) before including vector_isa_impl.hpp"
#endif

namespace tapestry::backend::cpu {

namespace {

#if TAPESTRY_VM_LEVEL == 3
// ---------------------------------------------------------------- AVX-512 F
#define TAPESTRY_VM_TABLE vectorKernelsAvx512
constexpr CpuIsa kIsa = CpuIsa::Avx512;
constexpr int W = 16;
using VF = __m512;
using VM = __mmask16;
inline VF vset(float x) {
  return _mm512_set1_ps(x);
}
inline VF vload(const float* p) {
  return _mm512_loadu_ps(p);
}
inline void vstore(float* p, VF v) {
  _mm512_storeu_ps(p, v);
}
inline VF vadd(VF a, VF b) {
  return _mm512_add_ps(a, b);
}
inline VF vsub(VF a, VF b) {
  return _mm512_sub_ps(a, b);
}
inline VF vmul(VF a, VF b) {
  return _mm512_mul_ps(a, b);
}
inline VF vdiv(VF a, VF b) {
  return _mm512_div_ps(a, b);
}
inline VF vmaxps(VF a, VF b) {
  return _mm512_max_ps(a, b);
}
inline VF vminps(VF a, VF b) {
  return _mm512_min_ps(a, b);
}
inline VM vnone() {
  return 0;
}
inline VM vgt(VF a, VF b) {
  return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ);
}
inline VM visnan(VF a) {
  return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
}
inline VM vor(VM a, VM b) {
  return static_cast<VM>(a | b);
}
inline bool vany(VM m) {
  return m != 0;
}
inline VF vselect(VM m, VF t, VF f) {
  return _mm512_mask_blend_ps(m, f, t);
}
inline VF vbits(VF a, std::int32_t andMask, std::int32_t xorMask) {
  const __m512i bits = _mm512_and_epi32(_mm512_castps_si512(a), _mm512_set1_epi32(andMask));
  return _mm512_castsi512_ps(_mm512_xor_epi32(bits, _mm512_set1_epi32(xorMask)));
}
inline VF vsqrt(VF a) {
  return _mm512_sqrt_ps(a);
}
inline VF vexp(VF a) {
  return Sleef_expf16_u10avx512f(a);
}
inline VF vlog(VF a) {
  return Sleef_logf16_u10avx512f(a);
}
inline VF vtanh(VF a) {
  return Sleef_tanhf16_u10avx512f(a);
}
inline VF verf(VF a) {
  return Sleef_erff16_u10avx512f(a);
}
inline VF vpow(VF a, VF b) {
  return Sleef_powf16_u10avx512f(a, b);
}
// a * b + c (one rounding where the level has FMA; SSE2 rounds twice).
inline VF vfma(VF a, VF b, VF c) {
  return _mm512_fmadd_ps(a, b, c);
}
#elif TAPESTRY_VM_LEVEL == 2
// ---------------------------------------------------------------- AVX2 + FMA
#define TAPESTRY_VM_TABLE vectorKernelsAvx2
constexpr CpuIsa kIsa = CpuIsa::Avx2;
constexpr int W = 8;
using VF = __m256;
using VM = __m256;
inline VF vset(float x) {
  return _mm256_set1_ps(x);
}
inline VF vload(const float* p) {
  return _mm256_loadu_ps(p);
}
inline void vstore(float* p, VF v) {
  _mm256_storeu_ps(p, v);
}
inline VF vadd(VF a, VF b) {
  return _mm256_add_ps(a, b);
}
inline VF vsub(VF a, VF b) {
  return _mm256_sub_ps(a, b);
}
inline VF vmul(VF a, VF b) {
  return _mm256_mul_ps(a, b);
}
inline VF vdiv(VF a, VF b) {
  return _mm256_div_ps(a, b);
}
inline VF vmaxps(VF a, VF b) {
  return _mm256_max_ps(a, b);
}
inline VF vminps(VF a, VF b) {
  return _mm256_min_ps(a, b);
}
inline VM vnone() {
  return _mm256_setzero_ps();
}
inline VM vgt(VF a, VF b) {
  return _mm256_cmp_ps(a, b, _CMP_GT_OQ);
}
inline VM visnan(VF a) {
  return _mm256_cmp_ps(a, a, _CMP_UNORD_Q);
}
inline VM vor(VM a, VM b) {
  return _mm256_or_ps(a, b);
}
inline bool vany(VM m) {
  return _mm256_movemask_ps(m) != 0;
}
inline VF vselect(VM m, VF t, VF f) {
  return _mm256_blendv_ps(f, t, m);
}
inline VF vbits(VF a, std::int32_t andMask, std::int32_t xorMask) {
  const VF bits = _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(andMask)));
  return _mm256_xor_ps(bits, _mm256_castsi256_ps(_mm256_set1_epi32(xorMask)));
}
inline VF vsqrt(VF a) {
  return _mm256_sqrt_ps(a);
}
inline VF vexp(VF a) {
  return Sleef_expf8_u10avx2(a);
}
inline VF vlog(VF a) {
  return Sleef_logf8_u10avx2(a);
}
inline VF vtanh(VF a) {
  return Sleef_tanhf8_u10avx2(a);
}
inline VF verf(VF a) {
  return Sleef_erff8_u10avx2(a);
}
inline VF vpow(VF a, VF b) {
  return Sleef_powf8_u10avx2(a, b);
}
// a * b + c (one rounding where the level has FMA; SSE2 rounds twice).
inline VF vfma(VF a, VF b, VF c) {
  return _mm256_fmadd_ps(a, b, c);
}
#elif TAPESTRY_VM_LEVEL == 1
// ---------------------------------------------------------------- SSE2 (every x86-64)
#define TAPESTRY_VM_TABLE vectorKernelsSse2
constexpr CpuIsa kIsa = CpuIsa::Sse2;
constexpr int W = 4;
using VF = __m128;
using VM = __m128;
inline VF vset(float x) {
  return _mm_set1_ps(x);
}
inline VF vload(const float* p) {
  return _mm_loadu_ps(p);
}
inline void vstore(float* p, VF v) {
  _mm_storeu_ps(p, v);
}
inline VF vadd(VF a, VF b) {
  return _mm_add_ps(a, b);
}
inline VF vsub(VF a, VF b) {
  return _mm_sub_ps(a, b);
}
inline VF vmul(VF a, VF b) {
  return _mm_mul_ps(a, b);
}
inline VF vdiv(VF a, VF b) {
  return _mm_div_ps(a, b);
}
inline VF vmaxps(VF a, VF b) {
  return _mm_max_ps(a, b);
}
inline VF vminps(VF a, VF b) {
  return _mm_min_ps(a, b);
}
inline VM vnone() {
  return _mm_setzero_ps();
}
inline VM vgt(VF a, VF b) {
  return _mm_cmpgt_ps(a, b);
}
inline VM visnan(VF a) {
  return _mm_cmpunord_ps(a, a);
}
inline VM vor(VM a, VM b) {
  return _mm_or_ps(a, b);
}
inline bool vany(VM m) {
  return _mm_movemask_ps(m) != 0;
}
inline VF vselect(VM m, VF t, VF f) {
  return _mm_or_ps(_mm_and_ps(m, t), _mm_andnot_ps(m, f));
}
inline VF vbits(VF a, std::int32_t andMask, std::int32_t xorMask) {
  const VF bits = _mm_and_ps(a, _mm_castsi128_ps(_mm_set1_epi32(andMask)));
  return _mm_xor_ps(bits, _mm_castsi128_ps(_mm_set1_epi32(xorMask)));
}
inline VF vsqrt(VF a) {
  return _mm_sqrt_ps(a);
}
inline VF vexp(VF a) {
  return Sleef_expf4_u10sse2(a);
}
inline VF vlog(VF a) {
  return Sleef_logf4_u10sse2(a);
}
inline VF vtanh(VF a) {
  return Sleef_tanhf4_u10sse2(a);
}
inline VF verf(VF a) {
  return Sleef_erff4_u10sse2(a);
}
inline VF vpow(VF a, VF b) {
  return Sleef_powf4_u10sse2(a, b);
}
// a * b + c (one rounding where the level has FMA; SSE2 rounds twice).
inline VF vfma(VF a, VF b, VF c) {
  return _mm_add_ps(_mm_mul_ps(a, b), c);
}
#else
#error "TAPESTRY_VM_LEVEL must be 1, 2 or 3"
#endif

} // namespace

} // namespace tapestry::backend::cpu
