// The simulator's peak-memory sweep over one device's events (simulator.cpp),
// exposed so that tests can hold it against a plain sort-and-sweep.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tapestry::cost::detail {

// A memory event: time (as its order-preserving bits) and whether it frees, so
// that at equal times frees sort first.
struct MemEvent {
  std::uint64_t key;
  std::int64_t delta;
};

// Times are >= 0, whose IEEE bits order like the values; the sign bit is free.
std::uint64_t eventKey(double time, bool alloc);
inline constexpr std::uint64_t kZeroAlloc = 1; // eventKey(0.0, true)

// How many of the time-ordered events a[0, n) come before `key` (no event
// has that key: a free's and an allocation's keys differ in their last bit),
// searched outward from `at` with doubling steps, then by halving: a few
// comparisons when the answer is near `at`, as it mostly is.
std::size_t placeNear(const MemEvent* a, std::size_t n, std::size_t at, std::uint64_t key);

// Scratch of peakLive, kept between calls (no allocation once warm).
struct PeakScratch {
  std::vector<MemEvent> merged;
  std::vector<std::int64_t> gap;
};

// The most bytes live at once on one device: `atZero` allocated at time 0,
// after the frees at time 0 and before every other event, then the
// allocations [allocs, allocs + n) (keys above kZeroAlloc, in any order: they
// are reordered in place) and the frees [frees, frees + m) (negative deltas,
// in any order), frees first at equal times. Never below 0.
//
// Allocations come in buffer order, a device's shard outputs first and in
// time order (its queue runs them one after another), then its transfers,
// less ordered: only what follows the longest ordered start is sorted, then
// merged with it. Frees are not sorted: they too come nearly in time order,
// so a search outward from the last one's place (placeNear) finds each one's
// place among the allocations, and its bytes go to the gap before the first
// allocation after it; one pass over the allocations then sees every free at
// its place. A free after the last allocation cannot raise the peak and is
// dropped. (On ResNet-50 b32 for h100x8, about 180 allocations per device and
// as many frees, in 27 and 17 ordered runs: a default search 10-14% faster
// than with both sorted and merged.)
std::int64_t peakLive(MemEvent* allocs, std::size_t n, const MemEvent* frees, std::size_t m,
                      std::int64_t atZero, PeakScratch& scratch);

} // namespace tapestry::cost::detail
