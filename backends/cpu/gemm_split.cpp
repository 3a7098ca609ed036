// A product large enough for several threads (productThreads), split into
// parts that run at once on the calling thread's OpenMP team, the team its
// convolutions, pooling and elementwise loops run on, each part a one-thread
// oneDNN engine (oneDNN runs sequentially inside a parallel region). Until
// 2026-11-29 the parts ran on helper threads of their own, which yielded
// for 2 ms and then slept: after a team region (a convolution, or a product
// on the team) the team's threads spin for milliseconds, and a helper woken
// behind them waited for its core. A transformer block at 256 rows, whose
// products of 16 MiB of weights run on the team and of 4 MiB in parts,
// measured 30.2-31.5 ms with helpers and 25.1-26.5 ms with the parts on the
// team (docs/cpu-products.md).
#include <algorithm>
#include <exception>
#include <vector>

#include <omp.h>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cpu/gemm_engine.hpp"

namespace tapestry::backend::cpu {

namespace {

// One part of a split product: its engine and where its operands start
// (bytes from the whole product's operands).
struct Part {
  std::unique_ptr<GemmEngine> engine;
  std::int64_t a = 0, b = 0, c = 0, bias = 0;
};

class SplitGemm final : public GemmEngine {
public:
  explicit SplitGemm(std::vector<Part> parts, const char* along)
      : parts_(std::move(parts)), along_(along) {}

  void run(const std::byte* a, const std::byte* b, std::byte* c, const std::byte* bias) override {
    // Fewer threads than parts (kernelThreads() went down since prepare): the
    // parts in turns.
    const int threads = static_cast<int>(
        std::min(parts_.size(), static_cast<std::size_t>(CpuBackend::kernelThreads())));
    if (threads <= 1) {
      for (const Part& p : parts_) {
        runPart(p, a, b, c, bias);
      }
      return;
    }
    std::exception_ptr error;
#pragma omp parallel num_threads(threads)
    {
      const auto first = static_cast<std::size_t>(omp_get_thread_num());
      const auto step = static_cast<std::size_t>(omp_get_num_threads());
      try {
        for (std::size_t i = first; i < parts_.size(); i += step) {
          runPart(parts_[i], a, b, c, bias);
        }
      } catch (...) {
#pragma omp critical(tapestry_split_gemm_error)
        error = std::current_exception();
      }
    }
    if (error) {
      std::rethrow_exception(error);
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

  bool appliesActivation() const override {
    return std::all_of(parts_.begin(), parts_.end(),
                       [](const Part& p) { return p.engine->appliesActivation(); });
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
                                          int parts, const GemmActivation& activation) {
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
    p.engine = makeDnnlGemm(dtype, part, partWeights, 1, activation);
    if (!p.engine) {
      return nullptr;
    }
    out.push_back(std::move(p));
  }
  return std::make_unique<SplitGemm>(std::move(out), along);
}

} // namespace tapestry::backend::cpu
