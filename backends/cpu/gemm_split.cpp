// A product large enough for several threads (productThreads), split into
// parts that run at once: the calling thread runs the first, helper threads
// of its own the others, each part a one-thread oneDNN engine. Why not
// oneDNN's OpenMP team: libgomp's team threads spin for about 5 ms after each
// parallel region without yielding, and on a machine whose cores the
// executor has all given out that spin took a core from the kernels that
// follow (resnet18's convolutions ran 8% slower after its classifier's
// two-thread product; docs/cpu-products.md). A helper yields while it waits
// for the next part (2 ms), then sleeps, and is kept off its caller's core:
// the scheduler woke it there, where the two parts ran one after the other.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/gemm_engine.hpp"
#include "core/diag/error.hpp"

namespace tapestry::backend::cpu {

namespace {

// One part of a split product: its engine and where its operands start
// (bytes from the whole product's operands).
struct Part {
  std::unique_ptr<GemmEngine> engine;
  std::int64_t a = 0, b = 0, c = 0, bias = 0;
};

// A thread that runs one part at a time for the thread that owns it.
class Helper {
public:
  Helper() : thread_([this] { loop(); }) {}
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  ~Helper() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_one();
    thread_.join();
  }

  // Keeps the helper off `cpu` (the caller's): the scheduler wakes a thread on
  // its waker's core, where the two parts then ran one after the other.
  void avoid(int cpu) {
    cpu_set_t allowed;
    if (cpu < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) {
      return;
    }
    CPU_CLR(cpu, &allowed);
    pthread_setaffinity_np(thread_.native_handle(), sizeof allowed, &allowed);
  }

  // Starts `part` on the operands; finish() waits for it.
  void start(const Part& part, const std::byte* a, const std::byte* b, std::byte* c,
             const std::byte* bias) {
    part_ = &part;
    a_ = a;
    b_ = b;
    c_ = c;
    bias_ = bias;
    error_ = nullptr;
    const std::uint64_t ticket = posted_.load(std::memory_order_relaxed) + 1;
    posted_.store(ticket, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_one();
    }
  }

  // Waits for the part started last; rethrows what it threw.
  void finish() {
    wait();
    if (error_) {
      std::rethrow_exception(error_);
    }
  }
  void wait() {
    const std::uint64_t ticket = posted_.load(std::memory_order_relaxed);
    for (int i = 0; done_.load(std::memory_order_acquire) != ticket; ++i) {
      relax(i);
    }
  }

private:
  // One step of a wait: a pause for the first few, then a yield, so that a
  // thread the scheduler put on this core (the helper beside its caller, or
  // the caller beside a spinning helper) gets it: spinning there stalled a
  // product until the scheduler moved one of them (milliseconds).
  static void relax(int i) {
    if (i < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }

  void loop() {
    std::uint64_t seen = 0;
    while (true) {
      // Spin a little for the next part (products often come in runs), then sleep.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinUs);
      for (int i = 0; posted_.load(std::memory_order_seq_cst) == seen; ++i) {
        if ((i & 15) == 15 && std::chrono::steady_clock::now() > until) {
          std::unique_lock<std::mutex> lock(mutex_);
          sleeping_.store(true, std::memory_order_seq_cst);
          wake_.wait(lock, [&] {
            return stop_.load() || posted_.load(std::memory_order_seq_cst) != seen;
          });
          sleeping_.store(false, std::memory_order_seq_cst);
          break;
        }
        relax(i);
      }
      if (stop_.load()) {
        return;
      }
      seen = posted_.load(std::memory_order_acquire);
      try {
        part_->engine->run(a_ + part_->a, b_ + part_->b, c_ + part_->c,
                           bias_ != nullptr ? bias_ + part_->bias : nullptr);
      } catch (...) {
        error_ = std::current_exception();
      }
      done_.store(seen, std::memory_order_release);
    }
  }

  static constexpr int kSpinUs = 2000;

  const Part* part_ = nullptr;
  const std::byte* a_ = nullptr;
  const std::byte* b_ = nullptr;
  std::byte* c_ = nullptr;
  const std::byte* bias_ = nullptr;
  std::exception_ptr error_;
  std::atomic<std::uint64_t> posted_{0};
  std::atomic<std::uint64_t> done_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_; // last: starts after every other member exists
};

// The calling thread's helpers, made when first needed and kept, and kept
// off the core the calling thread is on.
std::vector<std::unique_ptr<Helper>>& helpers(std::size_t count) {
  thread_local std::vector<std::unique_ptr<Helper>> mine;
  thread_local int avoided = -1;
  const int cpu = sched_getcpu();
  if (mine.size() < count || cpu != avoided) {
    while (mine.size() < count) {
      mine.push_back(std::make_unique<Helper>());
    }
    for (const auto& h : mine) {
      h->avoid(cpu);
    }
    avoided = cpu;
  }
  return mine;
}

class SplitGemm final : public GemmEngine {
public:
  explicit SplitGemm(std::vector<Part> parts, const char* along)
      : parts_(std::move(parts)), along_(along) {}

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) override {
    // Fewer threads than parts (kernelThreads() went down since prepare): the
    // parts one after another on this thread.
    const std::size_t threads =
        std::min(parts_.size(), static_cast<std::size_t>(CpuBackend::kernelThreads()));
    if (threads <= 1) {
      for (const Part& p : parts_) {
        runPart(p, a, b, c, bias);
      }
      return;
    }
    // Rounds of `threads` parts: this thread runs the first of each, helpers the rest.
    std::vector<std::unique_ptr<Helper>>& help = helpers(threads - 1);
    for (std::size_t first = 0; first < parts_.size(); first += threads) {
      const std::size_t end = std::min(parts_.size(), first + threads);
      for (std::size_t i = first + 1; i < end; ++i) {
        help[i - first - 1]->start(parts_[i], a, b, c, bias);
      }
      try {
        runPart(parts_[first], a, b, c, bias);
      } catch (...) {
        for (std::size_t i = first + 1; i < end; ++i) { // they read the operands: wait for them
          help[i - first - 1]->wait();
        }
        throw;
      }
      for (std::size_t i = first + 1; i < end; ++i) {
        help[i - first - 1]->finish();
      }
    }
  }

  void weightsChanged() override {
    for (Part& p : parts_) {
      p.engine->weightsChanged();
    }
  }

  std::string name() const override {
    return std::to_string(parts_.size()) + " parts along " + along_ + " of " +
           parts_.front().engine->name();
  }

private:
  static void runPart(const Part& p, const std::byte* a, const std::byte* b, std::byte* c,
                      const std::byte* bias) {
    p.engine->run(a + p.a, b + p.b, c + p.c, bias != nullptr ? bias + p.bias : nullptr);
  }

  std::vector<Part> parts_;
  const char* along_;
};

// [0, n) cut into `parts` near-equal pieces whose inner boundaries are
// multiples of `align` where n allows (whole vector registers per part).
std::vector<std::int64_t> cuts(std::int64_t n, int parts, std::int64_t align) {
  std::vector<std::int64_t> at = {0};
  for (int i = 1; i < parts; ++i) {
    std::int64_t cut = n * i / parts;
    if (n >= align * parts) {
      cut = (cut + align / 2) / align * align;
    }
    at.push_back(std::clamp(cut, at.back(), n));
  }
  at.push_back(n);
  return at;
}

} // namespace

std::unique_ptr<GemmEngine> makeSplitGemm(DType dtype, const GemmGeometry& g, WeightUse weights,
                                          int parts) {
  const auto size = static_cast<std::int64_t>(dtypeSize(dtype));
  // Along the batch when it has a part for everyone; else along m, so that
  // every part writes whole rows of a dense result (oneDNN's fast kernels
  // want dense rows; a part of the columns, with the rows' full stride, got
  // its slow generic gemm: 30x slower on [128, 128] x [128, 128]); along n
  // only for a single row (a classifier's [1, K] x [K, 1000]: each part
  // reads and packs its own columns of B, half the weights each).
  const char* along = g.batch >= parts ? "batch" : g.M >= parts ? "m" : "n";
  const std::int64_t extent = along[0] == 'b' ? g.batch : along[0] == 'n' ? g.N : g.M;
  if (parts < 2 || extent < parts) {
    return nullptr;
  }
  // Parts that all read the whole B (parts of the rows, or of a batch that
  // shares one B) read it in place rather than each packing a copy.
  const WeightUse partWeights =
      along[0] == 'm' || (along[0] == 'b' && g.bsB == 0) ? WeightUse::InPlace : weights;
  const std::vector<std::int64_t> at = cuts(extent, parts, along[0] == 'n' ? 16 : 1);
  std::vector<Part> out;
  for (int i = 0; i < parts; ++i) {
    const std::int64_t lo = at[static_cast<std::size_t>(i)];
    const std::int64_t count = at[static_cast<std::size_t>(i) + 1] - lo;
    if (count == 0) {
      continue;
    }
    GemmGeometry part = g;
    Part p;
    if (along[0] == 'b') {
      part.batch = count;
      p.a = lo * g.bsA * size;
      p.b = lo * g.bsB * size;
      p.c = lo * g.bsC * size;
    } else if (along[0] == 'n') {
      part.N = count;
      p.b = lo * g.csB * size;
      p.c = lo * g.csC * size;
      p.bias = lo * g.biasStride * size;
    } else {
      part.M = count;
      p.a = lo * g.rsA * size;
      p.c = lo * g.rsC * size;
    }
    p.engine = makeDnnlGemm(dtype, part, partWeights);
    if (!p.engine) {
      return nullptr;
    }
    out.push_back(std::move(p));
  }
  return std::make_unique<SplitGemm>(std::move(out), along);
}

} // namespace tapestry::backend::cpu
