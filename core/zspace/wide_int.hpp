// Internal to core/zspace: 128-bit accumulation for affine maps. A product of
// two int64 always fits in 128 bits, so P·x + b is computed exactly and only
// the final coordinate is checked against int64 — an error means the true
// result does not fit, never that an intermediate sum happened to wrap.
#pragma once

#include <cstdint>
#include <limits>

namespace tapestry::detail {

__extension__ typedef __int128 Int128;

// acc += a * b; false when the 128-bit sum overflows (only possible for sums of
// several products near 2^126, which no int64 result could come from anyway
// unless later terms cancel; such maps are rejected as overflowing).
inline bool accumulate(Int128& acc, std::int64_t a, std::int64_t b) {
  return !__builtin_add_overflow(acc, static_cast<Int128>(a) * b, &acc);
}

inline bool fitsInt64(Int128 v) {
  return v >= std::numeric_limits<std::int64_t>::min() &&
         v <= std::numeric_limits<std::int64_t>::max();
}

} // namespace tapestry::detail
