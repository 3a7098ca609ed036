#include "core/search/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tapestry::search {

void parallelFor(std::uint64_t count, int threads, const std::function<void(std::uint64_t)>& task) {
  const std::uint64_t workers =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(threads, 1)), count);
  if (workers <= 1) {
    for (std::uint64_t i = 0; i < count; ++i) {
      task(i);
    }
    return;
  }
  std::atomic<std::uint64_t> next{0};
  std::exception_ptr failure;
  std::mutex failureMutex;
  auto work = [&] {
    for (;;) {
      const std::uint64_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) {
        return;
      }
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failure) {
          failure = std::current_exception();
        }
        next.store(count);
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers - 1));
  for (std::uint64_t w = 1; w < workers; ++w) {
    pool.emplace_back(work);
  }
  work();
  for (std::thread& t : pool) {
    t.join();
  }
  if (failure) {
    std::rethrow_exception(failure);
  }
}

} // namespace tapestry::search
