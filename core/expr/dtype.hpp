// The dtypes Tapestry knows: one table, read by the expression language (a
// bare name such as float32 is a dtype), graph loading (which dtypes a tensor
// may have), plans (bytes per element) and the backends (which execute the
// first six and bool).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace tapestry::expr {

struct DTypeInfo {
  std::string_view name;
  std::int64_t bytes; // per element (bool and the float8 types: 1)
};

// Every dtype, in the order messages list them: float32, float64, float16,
// bfloat16, int32, int64 (what the backends execute, with bool), then int16,
// int8, the unsigned ints, bool, complex64, complex128, float8_e4m3fn,
// float8_e5m2.
std::span<const DTypeInfo> dtypes();
// nullptr for an unknown name.
const DTypeInfo* findDType(std::string_view name);

} // namespace tapestry::expr
