#include "backends/cpu/block_cache.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

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

struct BlockCache::State {
  std::size_t smallest = 0;
  std::size_t keep = 0;
  mutable std::mutex mutex;
  std::multimap<std::size_t, std::byte*> free; // by size
  std::size_t cached = 0;
  std::size_t reused = 0;

  ~State() {
    for (const auto& [size, p] : free) {
      drop(p);
    }
  }

  // Keeps a released block, or frees it when it is small or the cache full.
  void release(std::byte* p, std::size_t size) {
    if (size >= smallest) {
      const std::lock_guard<std::mutex> lock(mutex);
      if (cached + size <= keep) {
        free.emplace(size, p);
        cached += size;
        return;
      }
    }
    drop(p);
  }

  std::byte* reuse(std::size_t size) {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = free.find(size);
    if (it == free.end()) {
      return nullptr;
    }
    std::byte* p = it->second;
    free.erase(it);
    cached -= size;
    ++reused;
    return p;
  }
};

BlockCache::BlockCache(std::size_t smallest, std::size_t keep) : state_(std::make_shared<State>()) {
  state_->smallest = smallest;
  state_->keep = keep;
}

std::shared_ptr<std::byte> BlockCache::take(std::size_t bytes) {
  std::size_t size = std::max((bytes + kAlign - 1) / kAlign * kAlign, kAlign);
  if (size >= state_->smallest) {
    size = (size + kPage - 1) / kPage * kPage;
  }
  std::byte* p = size >= state_->smallest ? state_->reuse(size) : nullptr;
  if (p == nullptr) {
    p = fresh(size);
  }
  std::memset(p, 0, size);
  // The deleter holds the state, so a block outlives the cache object safely.
  return std::shared_ptr<std::byte>(
      p, [state = state_, size](std::byte* block) { state->release(block, size); });
}

std::size_t BlockCache::cachedBytes() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cached;
}

std::size_t BlockCache::reused() const {
  const std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->reused;
}

} // namespace tapestry::backend
