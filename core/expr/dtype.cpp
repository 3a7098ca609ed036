#include "core/expr/dtype.hpp"

#include <array>

namespace tapestry::expr {

std::span<const DTypeInfo> dtypes() {
  static constexpr std::array<DTypeInfo, 17> table = {{
      {"float32", 4},
      {"float64", 8},
      {"float16", 2},
      {"bfloat16", 2},
      {"int32", 4},
      {"int64", 8},
      {"int16", 2},
      {"int8", 1},
      {"uint8", 1},
      {"uint16", 2},
      {"uint32", 4},
      {"uint64", 8},
      {"bool", 1},
      {"complex64", 8},
      {"complex128", 16},
      {"float8_e4m3fn", 1},
      {"float8_e5m2", 1},
  }};
  return table;
}

const DTypeInfo* findDType(std::string_view name) {
  for (const DTypeInfo& d : dtypes()) {
    if (d.name == name) {
      return &d;
    }
  }
  return nullptr;
}

} // namespace tapestry::expr
