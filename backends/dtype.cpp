#include "backends/dtype.hpp"

#include <array>
#include <string>

#include "core/diag/error.hpp"
#include "core/expr/dtype.hpp"

namespace tapestry::backend {

namespace {

constexpr std::array<DType, 7> kDTypes = {DType::Float32,  DType::Float64, DType::Float16,
                                          DType::BFloat16, DType::Int32,   DType::Int64,
                                          DType::Bool};

} // namespace

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
  case DType::Bool:
    return "bool";
  }
  return "float32";
}

std::optional<DType> findDType(std::string_view name) {
  for (DType d : kDTypes) {
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
              "\" (supported: float32, float64, float16, bfloat16, int32, int64, bool)");
}

std::size_t dtypeSize(DType dtype) {
  // From the one dtype table (core/expr/dtype.hpp), indexed by the enum.
  static const std::array<std::size_t, kDTypes.size()> sizes = [] {
    std::array<std::size_t, kDTypes.size()> out{};
    for (DType d : kDTypes) {
      out[static_cast<std::size_t>(d)] =
          static_cast<std::size_t>(expr::findDType(dtypeName(d))->bytes);
    }
    return out;
  }();
  return sizes[static_cast<std::size_t>(dtype)];
}

bool isFloat(DType dtype) {
  return dtype != DType::Int32 && dtype != DType::Int64 && dtype != DType::Bool;
}

void boolNotSupported() {
  throw Error("backends: this operation does not compute on bool tensors (only where's "
              "condition, cast and the copy kernels take bool)");
}

} // namespace tapestry::backend
