// Element types the backends execute: the six numeric dtypes the standard
// library's templates allow, and bool (one byte, 0 or 1: where's condition).
// float16 and bfloat16 are stored as their 16-bit patterns and computed in
// float32; the conversions round to nearest even.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace tapestry::backend {

enum class DType { Float32, Float64, Float16, BFloat16, Int32, Int64, Bool };

const char* dtypeName(DType dtype); // "float32", ...
// nullopt for a name the backends cannot execute ("int8", "complex64", ...).
std::optional<DType> findDType(std::string_view name);
// Throws Error (exit 1) "backends cannot execute dtype \"int8\"" when unknown.
DType parseDType(std::string_view name);
std::size_t dtypeSize(DType dtype);
bool isFloat(DType dtype); // float32, float64, float16, bfloat16

// ---------------------------------------------------------------- 16-bit floats

// IEEE binary16, as its bit pattern.
struct Half {
  std::uint16_t bits = 0;
  friend bool operator==(Half, Half) = default;
};
// bfloat16 (the upper half of a float32), as its bit pattern.
struct BFloat16 {
  std::uint16_t bits = 0;
  friend bool operator==(BFloat16, BFloat16) = default;
};

// Exact (every half is a float).
inline float halfToFloat(Half h) {
  // Maratyszcza's FP16 conversion: scale the exponent with float arithmetic,
  // which handles normals, subnormals, infinities and NaN without branches.
  const std::uint32_t w = static_cast<std::uint32_t>(h.bits) << 16;
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t twoW = w + w;
  const float normalized = std::bit_cast<float>((twoW >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  const float denormalized = std::bit_cast<float>((twoW >> 17) | (126u << 23)) - 0.5f;
  const std::uint32_t magnitude = twoW < (1u << 27) ? std::bit_cast<std::uint32_t>(denormalized)
                                                    : std::bit_cast<std::uint32_t>(normalized);
  return std::bit_cast<float>(sign | magnitude);
}

// Round to nearest even; overflow gives infinity, NaN stays a (quiet) NaN.
inline Half floatToHalf(float f) {
  // Multiplying by 2^112 then 2^-110 rounds to the half's precision in the float
  // unit (default rounding mode: nearest even); the bias trick aligns the result.
  float base = (std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) & 0x7FFFFFFFu) * 0x1.0p+112f) *
               0x1.0p-110f;
  const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t shl1W = w + w;
  const std::uint32_t sign = w & 0x80000000u;
  std::uint32_t bias = shl1W & 0xFF000000u;
  if (bias < 0x71000000u) {
    bias = 0x71000000u;
  }
  base = std::bit_cast<float>((bias >> 1) + 0x07800000u) + base;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(base);
  const std::uint32_t expBits = (bits >> 13) & 0x00007C00u;
  const std::uint32_t mantissaBits = bits & 0x00000FFFu;
  const std::uint32_t nonsign = expBits + mantissaBits;
  return Half{static_cast<std::uint16_t>((sign >> 16) | (shl1W > 0xFF000000u ? 0x7E00u : nonsign))};
}

inline float bfloat16ToFloat(BFloat16 b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b.bits) << 16);
}

// Round to nearest even; NaN stays a (quiet) NaN.
inline BFloat16 floatToBFloat16(float f) {
  const std::uint32_t w = std::bit_cast<std::uint32_t>(f);
  if ((w & 0x7FFFFFFFu) > 0x7F800000u) {
    return BFloat16{static_cast<std::uint16_t>((w >> 16) | 0x0040u)};
  }
  const std::uint32_t rounded = w + 0x7FFFu + ((w >> 16) & 1u);
  return BFloat16{static_cast<std::uint16_t>(rounded >> 16)};
}

// bool, as its byte: 0 or 1 in every buffer the backends write (a .npy file's
// nonzero bytes read as 1). A struct, not C++ bool, so that no byte is ever
// read as a bool it does not hold, and so that no arithmetic kernel compiles
// for it by accident.
struct Bool {
  std::uint8_t bits = 0;
  friend bool operator==(Bool, Bool) = default;
};

// ---------------------------------------------------------------- dispatch

// The C++ storage type of each dtype, for templates: dispatch(dtype, f) calls
// f(TypeTag<T>{}) with T = float, double, Half, BFloat16, int32_t or int64_t,
// and throws Error for bool (the kernels that compute on numbers);
// dispatchWithBool(dtype, f) also calls f(TypeTag<Bool>{}) (conversions,
// random inputs, the check).
template <class T> struct TypeTag { using type = T; };

template <class T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() {
  return DType::Float32;
}
template <> constexpr DType dtypeOf<double>() {
  return DType::Float64;
}
template <> constexpr DType dtypeOf<Half>() {
  return DType::Float16;
}
template <> constexpr DType dtypeOf<BFloat16>() {
  return DType::BFloat16;
}
template <> constexpr DType dtypeOf<std::int32_t>() {
  return DType::Int32;
}
template <> constexpr DType dtypeOf<std::int64_t>() {
  return DType::Int64;
}

template <> constexpr DType dtypeOf<Bool>() {
  return DType::Bool;
}

// Error (exit 1) "... does not compute on bool tensors": a numeric kernel reached
// with a bool operand (only where, cast and copies take bool).
[[noreturn]] void boolNotSupported();

template <class F> decltype(auto) dispatch(DType dtype, F&& f) {
  switch (dtype) {
  case DType::Bool:
    boolNotSupported();
  case DType::Float32:
    return f(TypeTag<float>{});
  case DType::Float64:
    return f(TypeTag<double>{});
  case DType::Float16:
    return f(TypeTag<Half>{});
  case DType::BFloat16:
    return f(TypeTag<BFloat16>{});
  case DType::Int32:
    return f(TypeTag<std::int32_t>{});
  case DType::Int64:
    break;
  }
  return f(TypeTag<std::int64_t>{});
}

template <class F> decltype(auto) dispatchWithBool(DType dtype, F&& f) {
  if (dtype == DType::Bool) {
    return f(TypeTag<Bool>{});
  }
  return dispatch(dtype, std::forward<F>(f));
}

} // namespace tapestry::backend
