#include "backends/dtype.hpp"

#include <string>

#include "core/diag/error.hpp"

namespace tapestry::backend {

const char* dtypeName(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "float32";
  case DType::Float64:
    return "float64";
  case DType::Float16:
    return "float16";
  case DType::BFloat16:
    return "bfloat16";
  case DType::Int32:
    return "int32";
  case DType::Int64:
    return "int64";
  }
  return "float32";
}

std::optional<DType> findDType(std::string_view name) {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                  DType::Int64}) {
    if (name == dtypeName(d)) {
      return d;
    }
  }
  return std::nullopt;
}

DType parseDType(std::string_view name) {
  if (std::optional<DType> d = findDType(name)) {
    return *d;
  }
  throw Error("backends cannot execute dtype \"" + std::string(name) +
              "\" (supported: float32, float64, float16, bfloat16, int32, int64)");
}

std::size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::Float64:
  case DType::Int64:
    return 8;
  case DType::Float32:
  case DType::Int32:
    return 4;
  case DType::Float16:
  case DType::BFloat16:
    return 2;
  }
  return 4;
}

bool isFloat(DType dtype) {
  return dtype != DType::Int32 && dtype != DType::Int64;
}

} // namespace tapestry::backend
