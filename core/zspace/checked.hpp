// Overflow-checked int64 arithmetic for ZSpace. Index math on user-supplied
// shapes and maps must never be undefined behaviour: a result that does not fit
// in int64 is a user error (exit 1) naming the operation, not a silent wrap.
#pragma once

#include <cstdint>

namespace tapestry {

namespace detail {
// Out of line and cold so the checked operations stay small enough to inline.
[[noreturn]] void throwOverflow(std::int64_t a, char op, std::int64_t b);
[[noreturn]] void throwNegOverflow(std::int64_t a);
} // namespace detail

// a + b; throws Error "integer overflow: A + B does not fit in int64".
inline std::int64_t checkedAdd(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) [[unlikely]] {
    detail::throwOverflow(a, '+', b);
  }
  return r;
}

// a - b; throws Error "integer overflow: A - B does not fit in int64".
inline std::int64_t checkedSub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) [[unlikely]] {
    detail::throwOverflow(a, '-', b);
  }
  return r;
}

// a * b; throws Error "integer overflow: A * B does not fit in int64".
inline std::int64_t checkedMul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) [[unlikely]] {
    detail::throwOverflow(a, '*', b);
  }
  return r;
}

// -a; only INT64_MIN overflows. Throws Error "integer overflow: -(A) does not fit in int64".
inline std::int64_t checkedNeg(std::int64_t a) {
  std::int64_t r;
  if (__builtin_sub_overflow(std::int64_t{0}, a, &r)) [[unlikely]] {
    detail::throwNegOverflow(a);
  }
  return r;
}

} // namespace tapestry
