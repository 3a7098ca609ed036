#include "core/search/exhaustive.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "core/diag/error.hpp"
#include "core/search/parallel.hpp"

namespace tapestry::search {

namespace {

using Clock = std::chrono::steady_clock;

// Plans per task: large enough to amortize the archive merge, small enough to
// balance threads.
constexpr std::uint64_t kChunk = 512;

struct OpOptions {
  std::vector<std::vector<std::int64_t>> splits;
  std::uint64_t count = 0; // splits x devices
};

std::string countText(double n) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, n < 1e7 ? "%.0f" : "%.3g", n);
  return buffer;
}

} // namespace

std::optional<std::uint64_t> spaceSize(const SearchSpace& space, std::uint64_t limit) {
  std::uint64_t total = 1;
  const auto devices = static_cast<std::uint64_t>(space.deviceCount());
  for (std::size_t i = 0; i < space.opCount(); ++i) {
    auto splits = space.splits(i, static_cast<std::size_t>(limit));
    if (!splits) {
      return std::nullopt;
    }
    const std::uint64_t k = splits->size() * devices;
    if (k > limit || total > limit / k) {
      return std::nullopt;
    }
    total *= k;
  }
  return total;
}

namespace {

// One variant's space, enumerated: its ops' options and its plan count.
struct Enumeration {
  std::uint32_t variant = 0;
  std::vector<OpOptions> ops;
  std::uint64_t total = 0;
};

// Throws the --exhaustive refusal when the variant's space (plus `before`
// plans of earlier variants) exceeds `limit`.
Enumeration enumerate(const ChoiceScorer& evaluator, const SearchSpace& space,
                      std::uint32_t variant, std::uint64_t before, std::uint64_t limit) {
  const auto devices = static_cast<std::uint64_t>(space.deviceCount());
  Enumeration out;
  out.variant = variant;
  // Per op, its splits; the size of the whole space (as a double, to describe
  // spaces far over the limit).
  out.ops.resize(space.opCount());
  double estimate = 1;
  bool tooMany = false;
  std::uint64_t fewest = 0;
  std::uint64_t most = 0;
  for (std::size_t i = 0; i < space.opCount(); ++i) {
    auto splits = space.splits(i, static_cast<std::size_t>(limit));
    double k = 0;
    if (splits) {
      out.ops[i].splits = std::move(*splits);
      out.ops[i].count = out.ops[i].splits.size() * devices;
      k = static_cast<double>(out.ops[i].count);
    } else {
      tooMany = true;
      k = static_cast<double>(limit) * static_cast<double>(devices);
    }
    const auto ki = static_cast<std::uint64_t>(k);
    fewest = i == 0 ? ki : std::min(fewest, ki);
    most = std::max(most, ki);
    estimate *= k;
  }
  // Where the target forwards inputs, each plan with and without forwarding.
  const bool relaying = relays(evaluator);
  estimate *= relaying ? 2 : 1;
  estimate += static_cast<double>(before);
  if (tooMany || estimate > static_cast<double>(limit)) {
    const std::string variants =
        evaluator.variantCount() > 1
            ? " over " + std::to_string(evaluator.variantCount()) + " rewrite variants"
            : "";
    const std::string forwarding = relaying ? ", each with and without inputs forwarded" : "";
    throw Error(
        "--exhaustive: " + evaluator.graph().name + " has " + (tooMany ? "more than " : "") +
        countText(estimate) + " plans for " + std::to_string(devices) + " devices" + variants +
        forwarding + " (" + std::to_string(space.opCount()) + " operations, " +
        std::to_string(fewest) + " to " + std::to_string(most) + " choices each), more than the " +
        std::to_string(limit) + " it enumerates; drop --exhaustive to search it stochastically");
  }
  out.total = static_cast<std::uint64_t>(estimate + 0.5) - before;
  return out;
}

} // namespace

SearchResult runExhaustive(const ChoiceScorer& evaluator, int threads, std::uint64_t limit) {
  const Clock::time_point start = Clock::now();
  const std::vector<SearchSpace> spaces = searchSpaces(evaluator);
  std::vector<Enumeration> enumerations;
  std::uint64_t before = 0;
  for (std::uint32_t v = 0; v < spaces.size(); ++v) {
    enumerations.push_back(enumerate(evaluator, spaces[v], v, before, limit));
    before += enumerations.back().total;
  }

  SearchResult result;
  const std::uint32_t reported = evaluator.variants().reported;
  result.baselines = evaluateBaselines(evaluator, spaces[reported], nullptr, reported);
  for (const BaselineResult& b : result.baselines) {
    ++result.evaluations;
    result.invalid += b.objectives ? 0 : 1;
  }

  // Merging the chunk fronts in variant and chunk order keeps, among plans with
  // equal objectives, the first in enumeration order: the same for any thread
  // count.
  ParetoArchive archive;
  std::atomic<std::int64_t> invalid{0};
  const bool relaying = relays(evaluator);
  for (const Enumeration& en : enumerations) {
    const SearchSpace& space = spaces[en.variant];
    const auto devices = static_cast<std::uint64_t>(space.deviceCount());
    // Plan n: op i takes option (n / prod_{j<i} K_j) mod K_i = split * D + offset.
    auto decode = [&](std::uint64_t n) {
      plan::PlanChoice choice;
      choice.variant = en.variant;
      if (relaying) {
        choice.relay = n % 2 == 0;
        n /= 2;
      }
      choice.ops.reserve(en.ops.size());
      for (const OpOptions& op : en.ops) {
        const std::uint64_t k = n % op.count;
        n /= op.count;
        choice.ops.push_back(space.opChoice(op.splits[k / devices], static_cast<int>(k % devices)));
      }
      return choice;
    };
    const std::uint64_t chunks = (en.total + kChunk - 1) / kChunk;
    std::vector<std::vector<Evaluated>> fronts(chunks);
    parallelFor(chunks, threads, [&](std::uint64_t c) {
      ParetoArchive local;
      const std::uint64_t end = std::min(en.total, (c + 1) * kChunk);
      for (std::uint64_t n = c * kChunk; n < end; ++n) {
        plan::PlanChoice choice = decode(n);
        auto objectives = evaluator.evaluate(choice);
        if (!objectives) {
          invalid.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        local.insert(Evaluated{std::move(choice), *objectives});
      }
      fronts[c] = local.members();
    });
    for (std::vector<Evaluated>& front : fronts) {
      for (Evaluated& e : front) {
        archive.insert(std::move(e));
      }
    }
    result.evaluations += static_cast<std::int64_t>(en.total);
  }
  result.front = archive.sorted();
  result.iterations = 1;
  result.invalid += invalid.load();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

} // namespace tapestry::search
