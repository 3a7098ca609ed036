// The x86-64 ISA level of the CPU backend's vector loops (vector_math.hpp):
// SSE2 (every x86-64), AVX2 with FMA, AVX-512 F. The widest level the CPU
// has is used, unless TAPESTRY_CPU_ISA (sse2, avx2, avx512) or setCpuIsa()
// forces a lower one, which is how the tests run every level on one machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tapestry::backend {

enum class CpuIsa : std::uint8_t { Sse2, Avx2, Avx512 };
inline constexpr int kIsaCount = 3;

const char* isaName(CpuIsa isa); // "sse2", "avx2", "avx512"
std::optional<CpuIsa> parseIsa(std::string_view name);
// Whether this CPU executes the level (and its OS saves those registers).
bool cpuHasIsa(CpuIsa isa);
// The widest level this CPU executes (AVX2 needs FMA too).
CpuIsa detectedIsa();
// The level kernels prepared from now on use: setCpuIsa's, else
// TAPESTRY_CPU_ISA's (read once; a level the CPU lacks, or a name that is no
// level, is an Error naming the levels it has), else detectedIsa().
CpuIsa activeIsa();
// Test hook: force a level (InternalError when the CPU lacks it), or with
// nullopt go back to the default. Not for use while kernels are prepared on
// other threads.
void setCpuIsa(std::optional<CpuIsa> isa);

} // namespace tapestry::backend
