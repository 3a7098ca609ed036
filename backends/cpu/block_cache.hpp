// Large host blocks kept for reuse, as a GPU's caching allocator keeps device
// memory: the executor allocates every region a task makes and frees it after
// its last use, run after run, and a fresh block of a few MiB costs a page
// fault per 4 KiB on first touch. On the development machine a 32 MiB transfer
// into fresh pages took 5-20 ms, into a reused block 2.5 ms
// (docs/cost-model.md). Blocks are matched by exact size (rounded up to 4 KiB):
// a plan makes the same regions every run. Thread-safe; blocks handed out stay
// valid after the cache is destroyed (they are freed when released).
#pragma once

#include <cstddef>
#include <memory>

namespace tapestry::backend {

class BlockCache {
public:
  // Blocks of at least `smallest` bytes are kept after release while the
  // cache holds at most `keep` bytes; others go back to the heap, unless
  // `keepSmall` > 0: then smaller blocks are rounded up to a power of two
  // (from 64 bytes) and up to `keepSmall` bytes of each size are kept, in a
  // stack per size (a shard's output tile of a few KiB, taken and released on
  // every run: an aligned heap allocation costs more than a small kernel).
  BlockCache(std::size_t smallest, std::size_t keep, std::size_t keepSmall = 0);

  // A 64-byte aligned block of at least `bytes` (at least 64), zero-filled
  // unless `zeroed` is false (then its contents are unspecified). Small
  // blocks are kept per `lane` (the CPU backend: per device, that is per
  // worker): a block goes back to the lane that took it, so a worker reuses
  // the memory it wrote last run, which is still in its core's cache, rather
  // than a block the other worker wrote, whose lines its first writes must
  // pull over from the other core. Data-parallel plans on 2 cores, interleaved
  // A/B: concat_split_embedding 188-234 -> 111-113 us, convnet 172-184 ->
  // 147-154 us. Lanes past the last share stacks (modulo); large blocks are
  // shared by every lane.
  std::shared_ptr<std::byte> take(std::size_t bytes, bool zeroed = true, int lane = 0);

  std::size_t cachedBytes() const; // held for reuse now
  std::size_t reused() const;      // blocks handed out again so far

private:
  struct State;
  std::shared_ptr<State> state_;
};

} // namespace tapestry::backend
