#include "core/diag/interrupt.hpp"

#include <array>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace tapestry::interrupt {

namespace {

constexpr std::size_t kSlots = 16;
constexpr std::size_t kPathMax = 4096;

// Signal-safe state: lock-free atomics and fixed buffers only.
struct Temporary {
  std::atomic<int> state{0}; // 0 free, 1 being filled, 2 registered
  char path[kPathMax] = {};
};
std::array<Temporary, kSlots> temporaries;
std::atomic<bool> stopRequested{false};
std::atomic<int> deferrals{0};
std::atomic<bool> installed{false};

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

void removeTemporaries() {
  for (Temporary& t : temporaries) {
    if (t.state.load() == 2) {
      ::unlink(t.path);
    }
  }
}

extern "C" void onSignal(int sig) {
  if (deferrals.load() > 0 && !stopRequested.load()) {
    stopRequested.store(true);
    return;
  }
  removeTemporaries();
  // Die of the signal itself, so the shell sees 128 + sig (130 for SIGINT).
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

} // namespace

void install() {
  if (installed.exchange(true)) {
    return;
  }
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

const std::atomic<bool>& requested() {
  return stopRequested;
}

Deferral::Deferral() {
  deferrals.fetch_add(1);
}
Deferral::~Deferral() {
  deferrals.fetch_sub(1);
}

int registerTemporary(const char* path) {
  const std::size_t length = std::strlen(path);
  if (length >= kPathMax) {
    return -1;
  }
  for (std::size_t i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (temporaries[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(temporaries[i].path, path, length + 1);
      temporaries[i].state.store(2);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unregisterTemporary(int slot) {
  if (slot >= 0 && static_cast<std::size_t>(slot) < kSlots) {
    temporaries[static_cast<std::size_t>(slot)].state.store(0);
  }
}

} // namespace tapestry::interrupt
