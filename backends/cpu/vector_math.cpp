// The run-time choice of vector_math.hpp's ISA level (cpu_isa.hpp).
#include "backends/cpu/vector_math.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include "core/diag/error.hpp"

namespace tapestry::backend {

namespace {

// __builtin_cpu_supports reads CPUID and, for the AVX levels, whether the OS
// saves those registers (XGETBV), as libgcc's cpu model does.
bool cpuHas(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Sse2:
    return true;
  case CpuIsa::Avx2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case CpuIsa::Avx512:
    return __builtin_cpu_supports("avx512f") && cpuHas(CpuIsa::Avx2);
  }
  return false;
}

std::string levelsHere() {
  std::string out;
  for (int i = 0; i < kIsaCount; ++i) {
    if (cpuHas(static_cast<CpuIsa>(i))) {
      out += std::string(out.empty() ? "" : ", ") + isaName(static_cast<CpuIsa>(i));
    }
  }
  return out;
}

// TAPESTRY_CPU_ISA, checked once.
CpuIsa defaultIsa() {
  static const CpuIsa isa = [] {
    const char* forced = std::getenv("TAPESTRY_CPU_ISA");
    if (forced == nullptr || *forced == '\0') {
      return detectedIsa();
    }
    const std::optional<CpuIsa> level = parseIsa(forced);
    if (!level || !cpuHas(*level)) {
      throw UsageError("TAPESTRY_CPU_ISA=" + std::string(forced) +
                       (level ? ": this CPU lacks it" : ": not an ISA level") + " (this CPU runs " +
                       levelsHere() + ")");
    }
    return *level;
  }();
  return isa;
}

constexpr int kNotForced = -1;
std::atomic<int> forcedIsa{kNotForced};

} // namespace

const char* isaName(CpuIsa isa) {
  switch (isa) {
  case CpuIsa::Sse2:
    return "sse2";
  case CpuIsa::Avx2:
    return "avx2";
  case CpuIsa::Avx512:
    return "avx512";
  }
  return "?";
}

std::optional<CpuIsa> parseIsa(std::string_view name) {
  for (int i = 0; i < kIsaCount; ++i) {
    if (name == isaName(static_cast<CpuIsa>(i))) {
      return static_cast<CpuIsa>(i);
    }
  }
  return std::nullopt;
}

CpuIsa detectedIsa() {
  static const CpuIsa isa = cpuHas(CpuIsa::Avx512) ? CpuIsa::Avx512
                            : cpuHas(CpuIsa::Avx2) ? CpuIsa::Avx2
                                                   : CpuIsa::Sse2;
  return isa;
}

CpuIsa activeIsa() {
  const int forced = forcedIsa.load(std::memory_order_relaxed);
  return forced == kNotForced ? defaultIsa() : static_cast<CpuIsa>(forced);
}

void setCpuIsa(std::optional<CpuIsa> isa) {
  if (isa && !cpuHas(*isa)) {
    throw InternalError(std::string("setCpuIsa: this CPU lacks ") + isaName(*isa));
  }
  forcedIsa.store(isa ? static_cast<int>(*isa) : kNotForced, std::memory_order_relaxed);
}

bool cpuHasIsa(CpuIsa isa) {
  return cpuHas(isa);
}

} // namespace tapestry::backend

namespace tapestry::backend::cpu {

const VectorKernels& vectorKernels(CpuIsa isa) {
  if (!cpuHasIsa(isa)) {
    throw InternalError(std::string("vector kernels for ") + isaName(isa) +
                        " on a CPU that lacks it");
  }
  switch (isa) {
  case CpuIsa::Avx512:
    return vectorKernelsAvx512();
  case CpuIsa::Avx2:
    return vectorKernelsAvx2();
  case CpuIsa::Sse2:
    break;
  }
  return vectorKernelsSse2();
}

const VectorKernels& vectorKernels() {
  return vectorKernels(activeIsa());
}

} // namespace tapestry::backend::cpu
