#include "backends/cpu/block_cache.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace tapestry::backend {

namespace {

constexpr std::size_t kAlign = 64;
constexpr std::size_t kPage = 4096;

std::byte* fresh(std::size_t bytes) {
  return static_cast<std::byte*>(::operator new(bytes, std::align_val_t(kAlign)));
}

void drop(std::byte* p) {
  ::operator delete(p, std::align_val_t(kAlign));
}

} // namespace

// One power-of-two size of small blocks: a stack of released ones.
struct SizeClass {
  std::mutex mutex;
  std::vector<std::byte*> free;
};

constexpr std::size_t kSmallClasses = 32;
constexpr std::size_t kLanes = 8;

struct BlockCache::State {
  std::size_t smallest = 0;
  std::size_t keep = 0;
  std::size_t keepSmall = 0;
  mutable std::mutex mutex;
  std::multimap<std::size_t, std::byte*> free; // by size
  std::size_t cached = 0;
  std::size_t reused = 0;
  std::array<std::array<SizeClass, kSmallClasses>, kLanes> small; // by lane, log2(size)
  std::atomic<std::size_t> smallReused{0};

  ~State() {
    for (const auto& [size, p] : free) {
      drop(p);
    }
    for (auto& lane : small) {
      for (SizeClass& c : lane) {
        for (std::byte* p : c.free) {
          drop(p);
        }
      }
    }
  }

  SizeClass& smallClass(std::size_t lane, std::size_t size) {
    return small[lane][static_cast<std::size_t>(std::countr_zero(size))];
  }

  // Keeps a released block, or frees it when it is small or the cache full.
  // `takenSmall`: taken as a small block (requested below `smallest`; its
  // power-of-two size may be `smallest` itself: 600 KB rounds up to 1 MiB).
  // It goes back to the stack it was taken from: a small block filed with
  // the large ones was never asked for again, and each run took a fresh one
  // (ResNet-18 at 224x224: 4 MB more per run, up to the 2 GiB bound, and
  // every one of its [64, 56, 56] regions written into fresh pages).
  void release(std::byte* p, std::size_t size, std::size_t lane, bool takenSmall) {
    if (takenSmall) {
      SizeClass& c = smallClass(lane, size);
      const std::lock_guard<std::mutex> lock(c.mutex);
      if ((c.free.size() + 1) * size <= keepSmall) {
        c.free.push_back(p);
        return;
      }
    } else if (size >= smallest) {
      const std::lock_guard<std::mutex> lock(mutex);
      if (cached + size <= keep) {
        free.emplace(size, p);
        cached += size;
        return;
      }
    }
    drop(p);
  }

  // The block of that size released last: the one most likely still in
  // cache (equal sizes keep their order of release in the multimap; find()
  // would hand out the one released first, so that a plan taking two blocks
  // of one size cycled through all it had released, the coldest first).
  std::byte* reuse(std::size_t size) {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto [first, last] = free.equal_range(size);
    if (first == last) {
      return nullptr;
    }
    const auto it = std::prev(last);
    std::byte* p = it->second;
    free.erase(it);
    cached -= size;
    ++reused;
    return p;
  }
};

BlockCache::BlockCache(std::size_t smallest, std::size_t keep, std::size_t keepSmall)
    : state_(std::make_shared<State>()) {
  state_->smallest = smallest;
  state_->keep = keep;
  state_->keepSmall = keepSmall;
}

std::shared_ptr<std::byte> BlockCache::take(std::size_t bytes, bool zeroed, int lane) {
  const std::size_t l = static_cast<std::size_t>(std::max(lane, 0)) % kLanes;
  std::size_t size = std::max((bytes + kAlign - 1) / kAlign * kAlign, kAlign);
  std::byte* p = nullptr;
  const bool takenSmall = size < state_->smallest && state_->keepSmall > 0;
  if (size >= state_->smallest) {
    size = (size + kPage - 1) / kPage * kPage;
    p = state_->reuse(size);
  } else if (state_->keepSmall > 0) {
    size = std::bit_ceil(size);
    SizeClass& c = state_->smallClass(l, size);
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (!c.free.empty()) {
      p = c.free.back();
      c.free.pop_back();
      state_->smallReused.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (p == nullptr) {
    p = fresh(size);
  }
  if (zeroed) {
    std::memset(p, 0, size);
  }
  // The deleter holds the state, so a block outlives the cache object safely.
  return std::shared_ptr<std::byte>(p, [state = state_, size, l, takenSmall](std::byte* block) {
    state->release(block, size, l, takenSmall);
  });
}

std::size_t BlockCache::cachedBytes() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cached;
}

std::size_t BlockCache::reused() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->reused + state_->smallReused.load(std::memory_order_relaxed);
}

} // namespace tapestry::backend
