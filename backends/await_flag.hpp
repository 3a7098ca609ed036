// Waiting for another worker's task: spin briefly, then sleep.
#pragma once

#include <atomic>
#include <chrono>

namespace tapestry::backend {

// Returns once `flag` is true. Spins (with the CPU's pause hint) for up to
// `spin` before sleeping in std::atomic::wait: a sleeping thread's wake-up
// (a futex) takes 10-50 µs on a virtual machine, longer than most small
// kernels, and a plan of small shards hands work between devices every few
// microseconds. Past `spin` the thread sleeps, so a long wait (or more
// workers than cores, as under an oversubscribed mpirun) costs no CPU.
inline void awaitFlag(const std::atomic<bool>& flag,
                      std::chrono::nanoseconds spin = std::chrono::microseconds(50)) {
  if (flag.load(std::memory_order_acquire)) {
    return;
  }
  const auto until = std::chrono::steady_clock::now() + spin;
  do {
    for (int i = 0; i < 64; ++i) {
      if (flag.load(std::memory_order_acquire)) {
        return;
      }
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (std::chrono::steady_clock::now() < until);
  while (!flag.load(std::memory_order_acquire)) {
    flag.wait(false, std::memory_order_acquire);
  }
}

} // namespace tapestry::backend
