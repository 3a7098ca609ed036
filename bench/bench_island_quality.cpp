// The island model's search quality without mpirun (issue 11): for each seed,
// the plain search (one process) and K islands simulated in this process
// (runLocalIslands, one thread per island, the same code as under mpirun) with
// the same total budget, for one or more island settings. Prints each run's
// time x peak memory hypervolume and its ratio to one process; the reference
// point is 10% beyond the worst baseline or one-process front point of the
// seed, so every setting of one seed is measured against the same point.
//
//   bench_island_quality [GRAPH] [--target NAME] [--seeds 1,2,3] [--iterations N]
//                        [--ranks K] [--settings E:H[,E:H...]]
//                        [--trace] [--probe] [--archive N] [--cost] [--island-budget M]
//
// A setting E:H is an exchange interval (generations) and a home share
// (IslandOptions). Search quality only: wall times here are K threads of one
// process, not MPI ranks (bench/bench_islands.py measures those). --trace also
// prints the one-process hypervolume at generations 30, 100, 300, 1000, 2000,
// 3000 and 10000; --probe evaluates every one-move neighbour of the one-process
// front (is it a local optimum?); --archive N adds a one-process search whose
// archive keeps N plans (thinned to 64 for the measure); --cost times the
// evaluation of every one-process front plan and 3 mutations of each against
// its shard count (what the islands' load balance assumes) and prints the
// least-squares line and the correlation. --island-budget M gives the islands M
// times the one process's iterations: with M = K, each island evaluates as many
// plans as the one process, so on K free cores both take the same wall time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/cost/target.hpp"
#include "core/diag/error.hpp"
#include "core/graph/loader.hpp"
#include "core/metakernel/library.hpp"
#include "core/search/hypervolume.hpp"
#include "core/search/island.hpp"
#include "core/search/mutate.hpp"
#include "core/search/search.hpp"

using namespace tapestry;

namespace {

std::vector<std::string> splitList(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) {
      out.push_back(item);
    }
  }
  return out;
}

struct Setting {
  search::IslandOptions options;
  std::string label;
};

// 10% beyond the worst feasible baseline or front point of the one-process
// run, in time and in peak memory.
search::Point2 referencePoint(const search::SearchResult& single) {
  std::vector<search::Point2> points = search::timeMemoryPoints(single.front);
  for (const search::BaselineResult& b : single.baselines) {
    if (b.objectives && b.objectives->feasible) {
      points.push_back(
          search::Point2{b.objectives->timeS, static_cast<double>(b.objectives->peakMemoryBytes)});
    }
  }
  search::Point2 worst;
  for (const search::Point2& p : points) {
    worst.x = std::max(worst.x, p.x);
    worst.y = std::max(worst.y, p.y);
  }
  return search::Point2{worst.x * 1.1, worst.y * 1.1};
}

// Is the front a local optimum? Evaluates every plan that differs from a front
// plan in one operation's split or placement (the whole one-move
// neighbourhood) and prints each that would raise the hypervolume.
void probeNeighbours(const search::ChoiceScorer& evaluator,
                     const std::vector<search::Evaluated>& front, search::Point2 ref,
                     std::ostream& out) {
  const search::SearchSpace space(evaluator.graph(), evaluator.deviceCount());
  std::vector<search::Point2> points = search::timeMemoryPoints(front);
  double best = search::hypervolume2d(points, ref);
  std::int64_t evaluated = 0;
  for (const search::Evaluated& member : front) {
    for (std::size_t i = 0; i < space.opCount(); ++i) {
      const auto splits = space.splits(i, std::size_t{1} << 20);
      if (!splits) {
        continue; // too many to list; not so for the graphs this is meant for
      }
      for (const std::vector<std::int64_t>& split : *splits) {
        for (int offset = 0; offset < space.deviceCount(); ++offset) {
          plan::PlanChoice c = member.choice;
          c.ops[i] = space.opChoice(split, offset);
          if (!space.contains(c)) {
            continue;
          }
          ++evaluated;
          const std::optional<cost::Objectives> o = evaluator.evaluate(c);
          if (!o || !o->feasible) {
            continue;
          }
          std::vector<search::Point2> with = points;
          with.push_back({o->timeS, static_cast<double>(o->peakMemoryBytes)});
          const double hv = search::hypervolume2d(with, ref);
          if (hv > best) {
            best = hv;
            out << "\n  better neighbour of (" << member.objectives.timeS * 1e6 << " us, "
                << static_cast<double>(member.objectives.peakMemoryBytes) / 1e6 << " MB): op " << i
                << " " << search::formatSplit(split) << " at " << offset << " gives ("
                << o->timeS * 1e6 << " us, " << static_cast<double>(o->peakMemoryBytes) / 1e6
                << " MB), hypervolume " << hv;
          }
        }
      }
    }
  }
  out << "\n  probed " << evaluated << " one-move neighbours of the front; best hypervolume "
      << best << "\n";
}

void measureEvaluationCost(const search::ChoiceScorer& evaluator,
                           const std::vector<search::Evaluated>& plans, std::ostream& out) {
  const search::SearchSpace space(evaluator.graph(), evaluator.deviceCount());
  std::vector<double> x;
  std::vector<double> y;
  search::Rng rng(12345);
  for (const search::Evaluated& e : plans) {
    for (int variant = 0; variant < 4; ++variant) {
      plan::PlanChoice c = e.choice;
      if (variant > 0) {
        search::mutate(space, c, rng);
      }
      constexpr int kRepeats = 20;
      const auto t0 = std::chrono::steady_clock::now();
      bool valid = true;
      for (int r = 0; r < kRepeats; ++r) {
        valid = evaluator.evaluate(c).has_value();
      }
      const double us =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e6 /
          kRepeats;
      if (valid) {
        x.push_back(static_cast<double>(c.shardCount()));
        y.push_back(us);
      }
    }
  }
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  const double slope = sxy / sxx;
  out << "evaluation cost over " << x.size() << " plans: " << *std::min_element(x.begin(), x.end())
      << " to " << *std::max_element(x.begin(), x.end()) << " shards, "
      << *std::min_element(y.begin(), y.end()) << " to " << *std::max_element(y.begin(), y.end())
      << " us; us = " << my - slope * mx << " + " << slope << " x shards, correlation "
      << sxy / std::sqrt(sxx * syy) << "\n";
}

} // namespace

// A benchmark's main is its whole procedure (flags, measurements, the report
// table), read top to bottom; it is longer than 120 lines on purpose.
int main(int argc, char** argv) {
  std::string graphPath =
      std::string(TAPESTRY_SOURCE_DIR) + "/testdata/graphs/transformer_block.json";
  std::string targetName = "2x-h100x8";
  std::vector<std::uint64_t> seeds = {1, 2, 3};
  std::int64_t iterations = 300;
  int ranks = 4;
  std::int64_t islandBudget = 1;
  bool probe = false;
  bool evaluationCost = false;
  bool traceSingle = false;
  std::size_t largerArchive = 0;
  std::vector<Setting> settings;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "bench_island_quality: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--target") {
      targetName = value();
    } else if (a == "--seeds") {
      seeds.clear();
      for (const std::string& s : splitList(value(), ',')) {
        seeds.push_back(std::strtoull(s.c_str(), nullptr, 10));
      }
    } else if (a == "--iterations") {
      iterations = std::atoll(value().c_str());
    } else if (a == "--archive") {
      largerArchive = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--trace") {
      traceSingle = true;
    } else if (a == "--probe") {
      probe = true;
    } else if (a == "--cost") {
      evaluationCost = true;
    } else if (a == "--island-budget") {
      islandBudget = std::atoll(value().c_str());
    } else if (a == "--ranks") {
      ranks = std::atoi(value().c_str());
    } else if (a == "--settings") {
      for (const std::string& s : splitList(value(), ',')) {
        const std::vector<std::string> parts = splitList(s, ':');
        if (parts.size() != 2) {
          std::cerr << "bench_island_quality: a setting is E:H, not " << s << "\n";
          return 2;
        }
        Setting setting;
        setting.options.exchangeEvery = std::atoll(parts[0].c_str());
        setting.options.homeShare = std::atof(parts[1].c_str());
        setting.label = s;
        settings.push_back(setting);
      }
    } else {
      graphPath = a;
    }
  }
  if (settings.empty()) {
    settings.push_back(Setting{search::IslandOptions{}, "default"});
  }

  try {
    metakernel::MetakernelLibrary library = metakernel::MetakernelLibrary::load({});
    graph::ExpandedGraph g = graph::loadAndExpand(graphPath, library);
    cost::Target target = cost::loadTarget(targetName);
    search::ChoiceScorer evaluator(g, target);
    std::cout << "graph " << g.name << " on " << target.name << " (" << target.deviceCount()
              << " devices), " << iterations << " iterations, " << ranks << " islands with "
              << iterations * islandBudget << " iterations\n"
              << std::fixed << std::setprecision(2);
    std::vector<std::vector<double>> ratios(settings.size());
    std::vector<search::Evaluated> costPlans;
    for (std::uint64_t seed : seeds) {
      search::SearchOptions options;
      options.seed = seed;
      options.generations = iterations;
      // The one-process search, and its front's hypervolume along the way.
      std::vector<std::pair<std::int64_t, std::vector<search::Point2>>> trace;
      search::SearchOptions traced = options;
      if (traceSingle) {
        traced.onGeneration = [&trace](const search::SearchProgress& p) {
          for (std::int64_t at : {30, 100, 300, 1000, 2000, 3000, 10000}) {
            if (p.generation == at) {
              trace.emplace_back(at, search::timeMemoryPoints(p.archive->members()));
            }
          }
        };
      }
      const search::SearchResult single = search::runSearch(evaluator, traced);
      const search::Point2 ref = referencePoint(single);
      if (evaluationCost) {
        costPlans.insert(costPlans.end(), single.front.begin(), single.front.end());
      }
      const double base = search::hypervolume2d(search::timeMemoryPoints(single.front), ref);
      std::cout << "seed " << seed << ": 1 process " << base << " (" << single.front.size()
                << " plans, " << single.seconds << " s)";
      for (const auto& [generation, points] : trace) {
        std::cout << " [" << generation << ": " << search::hypervolume2d(points, ref) << "]";
      }
      if (probe) {
        probeNeighbours(evaluator, single.front, ref, std::cout);
      }
      if (largerArchive > 0) {
        search::SearchOptions larger = options;
        larger.archiveCap = largerArchive;
        const search::SearchResult r = search::runSearch(evaluator, larger);
        // Thinned to the usual 64 as a front file would be, for a fair comparison.
        search::ParetoArchive thinned(search::kDefaultArchiveCap);
        search::mergeFront(thinned, r.front);
        const double hv = search::hypervolume2d(search::timeMemoryPoints(thinned.members()), ref);
        std::cout << "; archive of " << largerArchive << " " << hv << " (" << std::setprecision(3)
                  << hv / base << std::setprecision(2) << ")";
      }
      search::SearchOptions islandOptions = options;
      islandOptions.generations = iterations * islandBudget;
      for (std::size_t s = 0; s < settings.size(); ++s) {
        const std::vector<search::SearchResult> islands =
            search::runLocalIslands(evaluator, islandOptions, settings[s].options, ranks);
        const double hv = search::hypervolume2d(search::timeMemoryPoints(islands[0].front), ref);
        ratios[s].push_back(hv / base);
        std::cout << "; " << settings[s].label << " " << hv << " (" << std::setprecision(3)
                  << hv / base << std::setprecision(2) << ")";
      }
      std::cout << std::endl;
    }
    for (std::size_t s = 0; s < settings.size(); ++s) {
      const std::vector<double>& r = ratios[s];
      double sum = 0;
      for (double x : r) {
        sum += x;
      }
      std::cout << settings[s].label << ": mean ratio " << std::setprecision(3)
                << sum / static_cast<double>(r.size()) << ", min "
                << *std::min_element(r.begin(), r.end()) << ", below 1: "
                << std::count_if(r.begin(), r.end(), [](double x) { return x < 1.0; }) << " of "
                << r.size() << "\n";
    }
    if (evaluationCost) {
      measureEvaluationCost(evaluator, costPlans, std::cout);
    }
  } catch (const Error& e) {
    std::cerr << "bench_island_quality: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
