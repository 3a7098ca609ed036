// The kernel threads' OpenMP team, for the loops of memory-bound kernels
// (elementwise, softmax and layernorm rows, copies and transposes): with one
// device on several cores, a loop of at least kTeamFrom elements runs on
// CpuBackend::kernelThreads() threads, each over its share of the loop's
// points in order. Every kernel splits its points the same way (the first
// share to the calling thread), so the next kernel's threads mostly read what
// their own cores wrote: mixing a loop on one thread with loops on the team
// made every loop after a change of team read half its input from the other
// core (one device, two threads: a ReLU after a layernorm 68 against 15 us
// for 1 MiB). Products and convolutions run on the same team (gemm_split.cpp,
// oneDNN). Not a public header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <omp.h>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/run_loop.hpp"
#include "backends/cpu/vector_math.hpp"

namespace tapestry::backend::cpu {

// The fewest elements a loop runs on the team from.
inline constexpr std::int64_t kTeamFrom = std::int64_t{1} << 16;

// The team for a loop over `elements` elements: the kernel threads from
// kTeamFrom, else the calling thread alone.
inline int teamThreads(std::int64_t elements) {
  const int threads = CpuBackend::kernelThreads();
  return threads >= 2 && elements >= kTeamFrom ? threads : 1;
}

// Calls part(lo, hi) on each thread of a team of `threads` with its share
// [lo, hi) of n points, in whole multiples of `grain` points (16 floats: a
// cache line) but the last; a share may be empty.
template <class F> void overTeam(int threads, std::int64_t n, std::int64_t grain, F&& part) {
#pragma omp parallel num_threads(threads)
  {
    const int team = omp_get_num_threads();
    const int k = omp_get_thread_num();
    const std::int64_t per = (n / team + grain - 1) / grain * grain;
    const std::int64_t lo = std::min(n, per * k);
    part(lo, k + 1 == team ? n : std::min(n, lo + per));
  }
}

// piece(at, m) over every run of `loop` (RunLoop::forRange's pieces): on the
// team when the loop has kTeamFrom elements or more (`elementsPerPoint` per
// point: a transpose's tiles hold many), each thread over its share of the
// points in multiples of `grain`; else on the calling thread, run by run.
template <std::size_t N, class F>
void forEachPiece(const RunLoop<N>& loop, const typename RunLoop<N>::Pointers& data,
                  std::int64_t elementsPerPoint, std::int64_t grain, F&& piece) {
  const std::int64_t points = loop.runCount() * loop.length();
  const int threads = loop.rangeable() && points > 1 ? teamThreads(points * elementsPerPoint) : 1;
  if (threads > 1) {
    overTeam(threads, points, grain,
             [&](std::int64_t lo, std::int64_t hi) { loop.forRange(data, lo, hi, piece); });
    return;
  }
  const std::int64_t n = loop.length();
  loop.forEach(data, [&](const auto& at) { piece(at, n); });
}

// VectorKernels::panelProduct over all panelCount(n) panels of `panels` (W
// of n columns packed by packPanels), pairs of panels shared out over the
// kernel threads' team (W read from memory once in all: each thread streams
// its own columns): y[r * ldy + j] for rows r < `rows`, columns j <
// panelCount(n) * kPanelWidth (the conv and product panel engines).
inline void panelProductOnTeam(const VectorKernels& vk, const float* panels, std::int64_t k,
                               std::int64_t n, const float* x, std::int64_t ldx, std::int64_t rows,
                               float* y, std::int64_t ldy) {
  const std::int64_t pairs = panelCount(n) / 2;
  const auto part = [&](std::int64_t lo, std::int64_t hi) {
    vk.panelProduct(panels, k, 2 * lo, 2 * hi, x, ldx, rows, y, ldy);
  };
  const int threads = CpuBackend::kernelThreads();
  if (threads <= 1 || pairs < 2) {
    part(0, pairs);
  } else {
    overTeam(threads, pairs, 1, part);
  }
}

} // namespace tapestry::backend::cpu
