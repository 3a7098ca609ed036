// Search throughput and convergence (issue 5), on testdata/graphs/transformer_block.json
// for h100x8 (8 devices):
//   1. plan evaluations (buildPlan + simulate) per second per thread, over the
//      candidates a real search draws (target: >= 10,000/s per thread in a
//      release build), then the same spread over --threads workers;
//   2. a default-budget search: its final front, and when it first reached 99%
//      of its final hypervolume (time x peak memory).
// Rates are per CPU second of the evaluating threads, so other load on the
// machine does not lower them; wall times are shown too.
//
//   bench_search [GRAPH] [--target NAME] [--threads N] [--seed N] [--iterations N] [--trace]
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <time.h>

#include "core/cost/target.hpp"
#include "core/cost/units.hpp"
#include "core/diag/error.hpp"
#include "core/graph/loader.hpp"
#include "core/metakernel/library.hpp"
#include "core/search/hypervolume.hpp"
#include "core/search/mutate.hpp"
#include "core/search/search.hpp"

using namespace tapestry;

namespace {

double cpuSeconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Snapshot {
  double seconds;
  std::int64_t evaluations;
  std::vector<search::Point2> points;
};

} // namespace

// A benchmark's main is its whole procedure (flags, measurements, the report
// table), read top to bottom; it is longer than 120 lines on purpose.
int main(int argc, char** argv) {
  std::string graphPath =
      std::string(TAPESTRY_SOURCE_DIR) + "/testdata/graphs/transformer_block.json";
  std::string targetName = "h100x8";
  int threads = 4;
  std::uint64_t seed = 1;
  std::int64_t iterations = 0;
  bool trace = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "bench_search: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--target") {
      targetName = value();
    } else if (a == "--threads") {
      threads = std::atoi(value().c_str());
    } else if (a == "--seed") {
      seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--trace") {
      trace = true;
    } else if (a == "--iterations") {
      iterations = std::atoll(value().c_str());
    } else {
      graphPath = a;
    }
  }

  try {
    metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::load({});
    graph::ExpandedGraph g = graph::loadAndExpand(graphPath, library);
    cost::Target target = cost::loadTarget(targetName);
    // As optimize evaluates: inputs from the host, forwarded between devices
    // where the target's links are faster (cost::relayGroups).
    search::ChoiceScorer evaluator(
        g, target, plan::PlanOptions{plan::InputsOn::Host, cost::relayGroups(target)});
    search::SearchSpace space(g, target.deviceCount());
    std::cout << "graph " << g.name << ": " << g.operations.size() << " operations; target "
              << target.name << ": " << target.deviceCount() << " devices\n";

    // 1. Candidates as the search draws them: mutations of the baselines and of
    //    their descendants.
    std::vector<plan::PlanChoice> candidates;
    {
      std::vector<plan::PlanChoice> pool;
      for (const search::Baseline& b : search::makeBaselines(space, evaluator.context())) {
        pool.push_back(b.choice);
      }
      search::Rng rng(seed);
      while (candidates.size() < 20000) {
        plan::PlanChoice c = pool[rng.below(pool.size())];
        search::mutate(space, c, rng);
        if (pool.size() < 256) {
          pool.push_back(c);
        } else {
          pool[rng.below(pool.size())] = c;
        }
        candidates.push_back(std::move(c));
      }
    }
    std::int64_t invalid = 0;
    const double cpu0 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    const double wall0 = wallSeconds();
    for (const plan::PlanChoice& c : candidates) {
      invalid += evaluator.evaluate(c) ? 0 : 1;
    }
    const double cpu1 = cpuSeconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    const double wall1 = wallSeconds() - wall0;
    const double perThread = static_cast<double>(candidates.size()) / cpu1;
    std::cout << "evaluations, 1 thread: " << candidates.size() << " plans (" << invalid
              << " invalid) in " << cpu1 << " CPU s (" << wall1
              << " s wall): " << static_cast<std::int64_t>(perThread)
              << " evaluations/s per thread (target 10000) "
              << (perThread >= 10000 ? "OK" : "BELOW TARGET") << "\n";

    const double pcpu0 = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
    const double pwall0 = wallSeconds();
    (void)search::evaluateAll(evaluator, candidates, threads);
    const double pcpu = cpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - pcpu0;
    const double pwall = wallSeconds() - pwall0;
    std::cout << "evaluations, " << threads << " threads: "
              << static_cast<std::int64_t>(static_cast<double>(candidates.size()) / pcpu)
              << " evaluations/s per thread (CPU), "
              << static_cast<std::int64_t>(static_cast<double>(candidates.size()) / pwall)
              << " evaluations/s wall\n";

    // 2. Convergence of a default search.
    std::vector<Snapshot> snapshots;
    search::SearchOptions options;
    options.seed = seed;
    options.threads = threads;
    options.generations = iterations;
    options.onGeneration = [&](const search::SearchProgress& p) {
      std::vector<search::Evaluated> members = p.archive->members();
      snapshots.push_back(Snapshot{p.seconds, p.evaluations, search::timeMemoryPoints(members)});
    };
    search::SearchResult result = search::runSearch(evaluator, options);

    // Reference point: 10% beyond the worst time and memory of the final front
    // and the baselines.
    search::Point2 ref{0, 0};
    auto widen = [&ref](const cost::Objectives& o) {
      ref.x = std::max(ref.x, o.timeS);
      ref.y = std::max(ref.y, static_cast<double>(o.peakMemoryBytes));
    };
    for (const search::Evaluated& e : result.front) {
      widen(e.objectives);
    }
    for (const search::BaselineResult& b : result.baselines) {
      if (b.objectives && b.objectives->feasible) {
        widen(*b.objectives);
      }
    }
    ref.x *= 1.1;
    ref.y *= 1.1;
    const double finalHv = search::hypervolume2d(search::timeMemoryPoints(result.front), ref);
    if (trace) {
      for (std::size_t i = 0; i < snapshots.size();
           i += std::max<std::size_t>(1, snapshots.size() / 30)) {
        std::cout << "  iteration " << i + 1 << ": " << snapshots[i].seconds << " s, hypervolume "
                  << search::hypervolume2d(snapshots[i].points, ref) / finalHv << " of final\n";
      }
    }
    double reachedAt = 0;
    std::int64_t reachedEvals = 0;
    for (const Snapshot& s : snapshots) {
      if (search::hypervolume2d(s.points, ref) >= 0.99 * finalHv) {
        reachedAt = s.seconds;
        reachedEvals = s.evaluations;
        break;
      }
    }
    double bestBaseline = 0;
    for (const search::BaselineResult& b : result.baselines) {
      if (b.objectives && b.objectives->feasible) {
        std::cout << "baseline " << b.baseline.name << ": " << cost::formatTime(b.objectives->timeS)
                  << ", peak " << cost::formatSize(b.objectives->peakMemoryBytes) << "\n";
        bestBaseline =
            bestBaseline == 0 ? b.objectives->timeS : std::min(bestBaseline, b.objectives->timeS);
      }
    }
    std::cout << "search (" << threads << " threads, seed " << seed << "): " << result.iterations
              << " iterations, " << result.evaluations << " evaluations in " << result.seconds
              << " s wall; front of " << result.front.size() << " plans; fastest "
              << cost::formatTime(result.front.front().objectives.timeS) << " ("
              << bestBaseline / result.front.front().objectives.timeS << "x the best baseline)\n";
    // A reference that does not depend on the run: 1.1 x the worst baseline.
    search::Point2 fixedRef{0, 0};
    for (const search::BaselineResult& b : result.baselines) {
      if (b.objectives && b.objectives->feasible) {
        fixedRef.x = std::max(fixedRef.x, 1.1 * b.objectives->timeS);
        fixedRef.y = std::max(fixedRef.y, 1.1 * static_cast<double>(b.objectives->peakMemoryBytes));
      }
    }
    std::cout << "hypervolume (s x GiB, reference 1.1 x the worst baseline): "
              << search::hypervolume2d(search::timeMemoryPoints(result.front), fixedRef) /
                     (1024.0 * 1024 * 1024)
              << "\n";
    std::cout << "99% of the final hypervolume after " << reachedAt << " s (" << reachedEvals
              << " evaluations, " << 100.0 * reachedAt / result.seconds << "% of the run)\n";
  } catch (const Error& e) {
    std::cerr << e.what();
    return 1;
  }
  return 0;
}
