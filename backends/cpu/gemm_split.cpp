// A product large enough for several threads, split into parts that run at
// once: the calling thread runs the first, helper threads of its own the
// others. Each part is a one-thread engine of its own (oneDNN's, with its
// own packed slice of a constant B). Why not oneDNN's OpenMP team: libgomp's
// team threads spin for milliseconds after each parallel region, and on a
// machine whose cores are all busy (the executor gives a product every core
// it has) that spin took a core from the kernels that follow: resnet18's
// convolutions ran 8% slower after its classifier's two-thread product
// (docs/cpu-products.md). A helper here spins briefly for the next part,
// then sleeps.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
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
    while (done_.load(std::memory_order_acquire) != ticket) {
      pause();
    }
  }

private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }

  void loop() {
    std::uint64_t seen = 0;
    while (true) {
      // Spin a little for the next part (products often come in runs), then sleep.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinUs);
      for (int i = 0; posted_.load(std::memory_order_seq_cst) == seen; ++i) {
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) {
          std::unique_lock<std::mutex> lock(mutex_);
          sleeping_.store(true, std::memory_order_seq_cst);
          wake_.wait(lock, [&] {
            return stop_.load() || posted_.load(std::memory_order_seq_cst) != seen;
          });
          sleeping_.store(false, std::memory_order_seq_cst);
          break;
        }
        pause();
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

  static constexpr int kSpinUs = 50;

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

// The calling thread's helpers, made when first needed and kept.
std::vector<std::unique_ptr<Helper>>& helpers(std::size_t count) {
  thread_local std::vector<std::unique_ptr<Helper>> mine;
  while (mine.size() < count) {
    mine.push_back(std::make_unique<Helper>());
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
  // Along the batch when it has a part for everyone; else along n (each part
  // reads and packs its own columns of B: a classifier's [1, K] x [K, 1000]
  // halves the weights each thread streams), or along m when there are few
  // columns and many rows.
  const char* along = g.batch >= parts                         ? "batch"
                      : g.N >= std::min<std::int64_t>(g.M, 64) ? "n"
                                                               : "m";
  const std::int64_t extent = along[0] == 'b' ? g.batch : along[0] == 'n' ? g.N : g.M;
  if (parts < 2 || extent < parts) {
    return nullptr;
  }
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
    p.engine = makeDnnlGemm(dtype, part, weights);
    if (!p.engine) {
      return nullptr;
    }
    out.push_back(std::move(p));
  }
  return std::make_unique<SplitGemm>(std::move(out), along);
}

} // namespace tapestry::backend::cpu
