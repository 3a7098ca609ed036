// The worker threads of a prepared plan (PreparedRun): started once and kept
// for every run, as a runtime keeps its thread pool. Starting a thread per
// worker on every run cost about 40 us on the development machine (the
// calibrated start overhead of a 2-device plan), more than a small graph's
// whole work; a kept worker that spins briefly between runs starts in well
// under a microsecond.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace tapestry::backend {

// The CPUs the calling thread may run on, in order (empty where the system
// does not say).
std::vector<int> allowedCpus();

class WorkerPool {
public:
  // A pool of `workers` workers: the calling thread is worker 0, and
  // `workers` - 1 threads are started now. With `pin`, where the calling
  // thread may run on at least `workers` CPUs, worker w is held to the w-th
  // of them (the calling thread until the pool is destroyed, then it gets its
  // CPUs back). Unpinned, Linux woke a worker on the CPU of the thread that
  // woke it and kept both there: on 2 cores a 2-device plan's workers shared
  // one CPU in some processes and ran 2-3x slower (tapestry bench, 2026-11-28).
  explicit WorkerPool(std::size_t workers, bool pin = false);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  ~WorkerPool();

  std::size_t workers() const { return threads_.size() + 1; }
  // Runs job(w) for every worker w, job(0) on the calling thread, and returns
  // once all have returned. job must not throw. One run at a time.
  void run(const std::function<void(std::size_t)>& job);

private:
  void loop(std::size_t worker);

  std::atomic<std::uint64_t> generation_{0}; // bumped to start a run
  std::atomic<std::size_t> pending_{0};      // pool threads still in this run's job
  std::atomic<bool> stop_{false};
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::vector<int> cpus_;             // worker w's CPU when pinned; empty: unpinned
  std::vector<int> callerCpus_;       // the calling thread's CPUs before the pool pinned it
  std::vector<std::jthread> threads_; // last: they start after the rest is set
};

} // namespace tapestry::backend
