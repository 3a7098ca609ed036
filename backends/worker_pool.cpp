#include "backends/worker_pool.hpp"

#include <chrono>

#include <pthread.h>
#include <sched.h>

namespace tapestry::backend {

namespace {

// Waits until `value` differs from `old`: spins with the CPU's pause hint for
// up to `spin`, then sleeps in std::atomic::wait (a futex wake-up takes 10-50
// us on a virtual machine; back-to-back runs of a small plan come faster).
template <class T>
T awaitChange(const std::atomic<T>& value, T old, std::chrono::nanoseconds spin) {
  T now = value.load(std::memory_order_acquire);
  if (now != old) {
    return now;
  }
  const auto until = std::chrono::steady_clock::now() + spin;
  do {
    for (int i = 0; i < 64; ++i) {
      now = value.load(std::memory_order_acquire);
      if (now != old) {
        return now;
      }
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (std::chrono::steady_clock::now() < until);
  while ((now = value.load(std::memory_order_acquire)) == old) {
    value.wait(old, std::memory_order_acquire);
  }
  return now;
}

constexpr auto kSpinBetweenRuns = std::chrono::microseconds(100);
constexpr auto kSpinForWorkers = std::chrono::microseconds(50);

// Holds the calling thread to `cpus`; false where the system refuses.
bool runOn(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    CPU_SET(c, &set);
  }
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

} // namespace

std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
    return out;
  }
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) {
      out.push_back(c);
    }
  }
  return out;
}

WorkerPool::WorkerPool(std::size_t workers, bool pin) {
  if (pin && workers > 1) {
    const std::vector<int> allowed = allowedCpus();
    if (allowed.size() >= workers && runOn({allowed[0]})) {
      callerCpus_ = allowed;
      cpus_.assign(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(workers));
    }
  }
  for (std::size_t w = 1; w < workers; ++w) {
    threads_.emplace_back([this, w] { loop(w); });
  }
}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  if (!callerCpus_.empty()) {
    runOn(callerCpus_); // assumes the pool dies on the thread that made it, as PreparedRun's does
  }
  // The jthreads join here.
}

void WorkerPool::loop(std::size_t worker) {
  if (!cpus_.empty()) {
    runOn({cpus_[worker]}); // best effort: unpinned, the worker still runs
  }
  std::uint64_t seen = 0;
  while (true) {
    seen = awaitChange(generation_, seen, kSpinBetweenRuns);
    if (stop_.load(std::memory_order_relaxed)) {
      return;
    }
    (*job_)(worker);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      pending_.notify_all();
    }
  }
}

void WorkerPool::run(const std::function<void(std::size_t)>& job) {
  if (threads_.empty()) {
    job(0);
    return;
  }
  job_ = &job;
  pending_.store(threads_.size(), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  job(0);
  std::size_t left = pending_.load(std::memory_order_acquire);
  while (left != 0) {
    left = awaitChange(pending_, left, kSpinForWorkers);
  }
}

} // namespace tapestry::backend
